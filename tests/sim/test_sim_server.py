"""The simulated SGLang server, launched as the real one is (python -m sglang.launch_server).

Each test starts real server processes on loopback and stops every one it started
(the Server helper kills only the process group it created).
"""
import http.client
import json
import os
import signal
import socket
import threading

import psutil
import pytest
from _server_fixtures import EAGLE, HOST, KIMI, MISMATCHED, Server, measure_throughput, stream_completion

from tests.support.polling import poll

try:
    from simlib import fakegpu
except ImportError:  # the fake GPU kit is written separately
    fakegpu = None

needs_gpus = pytest.mark.skipif(fakegpu is None, reason="fake GPU kit (sim/simlib/fakegpu.py) absent")
SPEC = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", EAGLE,
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4", "--sim-accept-length", "2.6"]
# The real 0.5.23 lines, in order (their emitters: sim/pypath/sglang/_sim/worker.py).
PHASES = ["server_args={", "Init parallel begin.", "Load weight begin", "Load weight end",
          "KV Cache is allocated", "Capture target decode CUDA graph begin.",
          "Capture target decode CUDA graph end.", "Uvicorn running on http://%s:" % HOST,
          "POST /generate", "The server is fired up and ready to roll!"]


@pytest.fixture
def servers(tmp_path):
    started = []

    def start(args=(), **kw):
        s = Server(tmp_path, list(args), **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def gpu_root(tmp_path, fakenvml_lib):
    """A 10-GPU fake host (so a CUDA_VISIBLE_DEVICES subset leaves GPUs untouched)."""
    return fakegpu.init(str(tmp_path / "host"), gpus=10, lib=fakenvml_lib)


def gpu_env(root, **extra):
    return dict(fakegpu.env(root), **extra)


def used_mib(root):
    return [g["used_mib"] for g in fakegpu.read_status(root)]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("plain"), ["--api-key", "sekrit"], tp=2)
    yield s.wait_ready()
    s.stop()


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("spec"), SPEC + ["--enable-metrics"], tp=2)
    yield s.wait_ready()
    s.stop()


AUTH = {"Authorization": "Bearer sekrit"}


# --- process tree and GPU memory -----------------------------------------------------------

@needs_gpus
def test_titles_children_and_memory_per_rank(servers, gpu_root):
    visible = [2, 3, 4, 5, 6, 7, 8, 9]
    s = servers(["--mem-fraction-static", "0.85"],
                env=gpu_env(gpu_root, CUDA_VISIBLE_DEVICES=",".join(map(str, visible))))
    s.wait_ready()
    main = psutil.Process(s.pid)
    assert "-m sglang.launch_server" in " ".join(main.cmdline())
    titles = {" ".join(c.cmdline()).strip(): c.pid for c in main.children()}
    expected = ["sglang::scheduler_TP%d" % r for r in range(8)] + ["sglang::detokenizer"]
    for title in expected:
        assert title in titles, (title, sorted(titles))
    total = fakegpu.read_status(gpu_root)[0]["total_mib"]
    used = used_mib(gpu_root)
    assert used[0] == used[1] == 0, used
    for rank, gpu in enumerate(visible):
        assert used[gpu] == pytest.approx(0.85 * total, abs=1), (rank, gpu, used)
        holders = fakegpu.read_status(gpu_root)[gpu]["holders"]
        assert [h["pid"] for h in holders] == [titles["sglang::scheduler_TP%d" % rank]]


@needs_gpus
def test_speculative_rank_holds_the_drafter_share_too(servers, gpu_root):
    s = servers(SPEC + ["--mem-fraction-static", "0.8"], env=gpu_env(gpu_root))
    s.wait_ready()
    total = fakegpu.read_status(gpu_root)[0]["total_mib"]
    used = used_mib(gpu_root)[:8]
    assert all(u > 0.8 * total + 2048 for u in used), used


# --- start-up --------------------------------------------------------------------------------

def test_phases_in_order_and_health_503_then_200(servers):
    s = servers(["--sim-warmup-seconds", "1.0"], tp=2)
    s.wait_log("Uvicorn running on")
    codes = []

    def health():
        status, unused = s.request("GET", "/health")
        codes.append(status)
        return status == 200

    poll(health, 20, what="/health 200")
    assert codes[0] == 503 and codes[-1] == 200, codes
    log = s.log()
    positions = [log.find(p) for p in PHASES]
    assert -1 not in positions, dict(zip(PHASES, positions))
    assert positions == sorted(positions), dict(zip(PHASES, positions))
    # /v1/models answered during warm-up too: not a readiness signal
    assert s.json("GET", "/v1/models")["data"][0]["id"] == KIMI


def test_nothing_listens_before_uvicorn(servers):
    s = servers(["--sim-load-seconds", "1.5"], tp=2)
    s.wait_log("Load weight begin")
    with pytest.raises(ConnectionRefusedError):
        s.request("GET", "/health")
    s.wait_ready()


# --- failures --------------------------------------------------------------------------------

def _assert_failed(s, *texts):
    code = s.wait_exit(30)
    assert code != 0, code
    log = s.log()
    for text in texts:
        assert text in log, (text, log[-3000:])
    poll(lambda: not s.group(), 10, what="no process of the server left")


def test_port_taken(servers):
    with socket.socket() as holder:
        holder.bind((HOST, 0))
        holder.listen(1)
        s = servers(tp=2, port=holder.getsockname()[1])
        _assert_failed(s, "Capture target decode CUDA graph end.", "[Errno 98]", "address already in use")


@needs_gpus
def test_gpu_already_held_by_another_process(servers, gpu_root):
    total = fakegpu.read_status(gpu_root)[3]["total_mib"]
    holding = fakegpu.hold(gpu_root, [3], total // 2)
    try:
        s = servers(env=gpu_env(gpu_root))
        _assert_failed(s, "Scheduler hit an exception", "Some GPUs may be occupied by other processes",
                       "Initialization failed.")
        assert used_mib(gpu_root)[:8] == [0, 0, 0, total // 2, 0, 0, 0, 0]
    finally:
        holding.close()


@needs_gpus
def test_all_gpus_held_is_cuda_oom_at_weight_load(servers, gpu_root):
    total = fakegpu.read_status(gpu_root)[0]["total_mib"]
    holding = fakegpu.hold(gpu_root, list(range(8)), total // 2)
    try:
        s = servers(env=gpu_env(gpu_root))
        _assert_failed(s, "Load weight begin", "torch.OutOfMemoryError: CUDA out of memory",
                       "Other processes have")
    finally:
        holding.close()


@needs_gpus
def test_memory_fraction_plus_drafter_is_cuda_oom(servers, gpu_root):
    s = servers(SPEC + ["--mem-fraction-static", "0.97"], env=gpu_env(gpu_root))
    _assert_failed(s, "KV Cache is allocated", "torch.OutOfMemoryError: CUDA out of memory",
                   "Traceback (most recent call last)")
    assert "CUDA graph begin" not in s.log()
    assert used_mib(gpu_root) == [0] * 10


def test_mismatched_drafter_fails_in_graph_capture(servers):
    s = servers(SPEC[:2] + ["--speculative-draft-model-path", MISMATCHED], tp=2)
    _assert_failed(s, "Capture target verify CUDA graph begin.", "mat1 and mat2 shapes cannot be multiplied")


def test_warmup_failure(servers):
    s = servers(["--sim-fail-warmup"], tp=2)
    _assert_failed(s, "Uvicorn running on", "Initialization failed. warmup error")
    assert "fired up" not in s.log()


def test_bad_argument_and_missing_config(servers, tmp_path):
    s = servers(["--tp-size", "eight"], tp=2)
    assert s.wait_exit() == 2
    assert "argument --tp-size" in s.log()
    s = servers(model=str(tmp_path), tp=2)
    _assert_failed(s, "does not appear to have a file named config.json")


def test_real_flags_the_simulator_does_not_model_are_accepted(servers):
    s = servers(["--enable-mixed-chunk", "--chunked-prefill-size", "4096"], tp=2)
    s.wait_ready()
    assert "'chunked_prefill_size': 4096" in s.log()  # the real record, in the server_args line


@pytest.mark.parametrize("flag, message", [
    (["--enable-mixed-chunks"], "error: unrecognized arguments: --enable-mixed-chunks"),
    (["--cuda-graph-max-bs", "8"], "error: ambiguous option: --cuda-graph-max-bs could match "
                                   "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"),
])
def test_flag_real_sglang_refuses_exits_2_with_its_message(servers, flag, message):
    s = servers(flag, tp=2)
    assert s.wait_exit(30) == 2
    log = s.log()
    assert message in log and "usage: sglang serve" in log, log[-2000:]
    assert "Init parallel begin." not in log


# --- signals and orphans ---------------------------------------------------------------------

@needs_gpus
def test_orphan_workers_outlive_a_sigkilled_parent(servers, gpu_root):
    s = servers(["--sim-orphan-workers"], env=gpu_env(gpu_root), tp=8)
    s.wait_ready()
    workers = [c for c in psutil.Process(s.pid).children() if "sglang::" in " ".join(c.cmdline())]
    os.kill(s.pid, signal.SIGKILL)
    s.wait_exit()
    alive = [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    assert len(alive) == 9, alive
    assert all(u > 0 for u in used_mib(gpu_root)[:8])
    for w in workers:
        os.kill(w.pid, signal.SIGKILL)
    poll(lambda: used_mib(gpu_root) == [0] * 10, 10, what="memory released")


def test_workers_die_with_a_sigkilled_parent(servers):
    s = servers(tp=2)
    s.wait_ready()
    workers = psutil.Process(s.pid).children()
    assert len(workers) >= 3
    os.kill(s.pid, signal.SIGKILL)
    s.wait_exit()
    poll(lambda: not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers),
         10, what="workers gone with their parent")


def test_sigterm_drains_in_flight_requests(servers):
    s = servers(tp=2)
    s.wait_ready()
    conn = http.client.HTTPConnection(HOST, s.port, timeout=30)
    result = {}
    t = threading.Thread(target=lambda: result.update(out=stream_completion(conn, 60)))
    t.start()
    s.wait_log("Prefill batch. #new-seq: 1, #new-token: 4")
    os.kill(s.pid, signal.SIGTERM)
    t.join(30)
    usage, texts = result["out"]
    assert usage["completion_tokens"] == 60 and len(texts) == 60
    assert s.wait_exit() == 0
    log = s.log()
    assert "SIGTERM received" in log and "Remaining number of requests 1" in log
    assert "Remaining number of requests 0" in log
    poll(lambda: not s.group(), 10, what="the tree gone")


def test_hang_on_term_ignores_sigterm(servers):
    s = servers(["--sim-hang-on-term"], tp=2)
    s.wait_ready()
    os.kill(s.pid, signal.SIGTERM)
    with pytest.raises(AssertionError, match="timed out"):
        s.wait_exit(1.5)
    assert len(s.group()) >= 4  # main, 2 schedulers, detokenizer


@pytest.mark.parametrize("args, after", [(SPEC, 503), ([], 200)], ids=["eagle3", "base"])
def test_sick_drafter_fails_health_after_its_first_200_on_a_speculative_server_only(servers, args, after):
    s = servers(args + ["--sim-sick-drafter"], tp=2)
    s.wait_ready()
    poll(lambda: s.request("GET", "/health")[0] == 200, 30, what="the first /health 200")
    assert [s.request("GET", "/health")[0] for unused in range(3)] == [after] * 3


# --- API -------------------------------------------------------------------------------------

def test_api_key_required_except_health(plain):
    assert plain.request("GET", "/v1/models")[0] == 401
    assert plain.request("POST", "/v1/completions", {"prompt": "x"})[0] == 401
    assert plain.request("GET", "/health")[0] == 200
    assert plain.request("GET", "/ready")[0] == 200  # open like /health (utils/auth.py)
    assert plain.request("GET", "/model_info", headers=AUTH)[0] == 200
    assert plain.request("GET", "/metrics", headers=AUTH)[0] == 404  # no --enable-metrics


def test_info_endpoints(plain):
    info = plain.json("GET", "/model_info", headers=AUTH)
    assert info["model_path"] == KIMI and info["is_generation"] is True
    assert plain.json("GET", "/get_model_info", headers=AUTH) == info
    server = plain.json("GET", "/server_info", headers=AUTH)
    # As real: the key holder gets the key and the command line back (build_server_info).
    assert server["tp_size"] == 2 and server["api_key"] == AUTH["Authorization"][len("Bearer "):]
    assert "--tp-size 2" in server["launch_command"] or "--tp 2" in server["launch_command"]
    assert "avg_spec_accept_length" not in server["internal_states"][0]


def test_completion_and_chat_usage(plain):
    out = plain.json("POST", "/v1/completions", {"prompt": "hello", "max_tokens": 12, "ignore_eos": True},
                     headers=AUTH)
    assert out["usage"]["completion_tokens"] == 12 and out["choices"][0]["finish_reason"] == "length"
    status, raw = plain.request("POST", "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "ignore_eos": True,
        "stream": True, "stream_options": {"include_usage": True}}, headers=AUTH)
    events = [line[6:] for line in raw.decode().split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"


def test_eos_without_ignore_eos_is_deterministic(plain):
    def lengths():
        out = {}

        def one(i):
            out[i] = plain.json("POST", "/generate", {"text": "q%d" % i, "sampling_params": {
                "max_new_tokens": 200, "temperature": 0}}, headers=AUTH)["meta_info"]["completion_tokens"]
        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [out[i] for i in range(8)]

    first = lengths()
    assert any(n < 200 for n in first), first
    assert lengths() == first


def test_generate_meta_info(plain):
    out = plain.json("POST", "/generate", {"text": "hello", "sampling_params": {
        "max_new_tokens": 9, "ignore_eos": True}}, headers=AUTH)
    meta = out["meta_info"]
    assert meta["completion_tokens"] == 9 and meta["prompt_tokens"] >= 1
    assert meta["finish_reason"] == {"type": "length", "length": 9}
    assert "spec_verify_ct" not in meta  # only with speculation, as in SGLang


def test_speculative_chunks_meta_and_metrics(spec):
    out = spec.json("POST", "/generate", {"text": "hi", "sampling_params": {
        "max_new_tokens": 64, "ignore_eos": True}})
    meta = out["meta_info"]
    accept = meta["completion_tokens"] / meta["spec_verify_ct"]
    assert 2.0 < accept <= 4.0, meta
    conn = http.client.HTTPConnection(HOST, spec.port, timeout=30)
    usage, texts = stream_completion(conn, 64)
    conn.close()
    assert usage["completion_tokens"] == 64
    assert len(texts) < 40 and max(t.count(" ") for t in texts) >= 2, texts
    state = spec.json("GET", "/server_info")["internal_states"][0]
    assert 2.0 < state["avg_spec_accept_length"] < 3.2
    metrics = spec.request("GET", "/metrics")[1].decode()
    assert "sglang:spec_accept_length{" in metrics and "sglang:generation_tokens_total{" in metrics
    gen = [float(line.split()[-1]) for line in metrics.splitlines()
           if line.startswith("sglang:generation_tokens_total")]
    assert sum(gen) >= 128
    verify = [float(line.split()[-1]) for line in metrics.splitlines()
              if line.startswith("sglang:spec_verify_calls_total{")]
    assert verify and 2.0 < sum(gen) / verify[0] <= 4.0, metrics


# --- throughput ------------------------------------------------------------------------------

def test_throughput_matches_the_seed_figures(tmp_path):
    s = Server(tmp_path, [], tp=2)
    try:
        s.wait_ready()
        single, unused = measure_throughput(s.port, 1, 3, 64)
        peak, tokens = measure_throughput(s.port, 128, 128, 64)
    finally:
        s.stop()
    assert single == pytest.approx(63.6, rel=0.05)
    assert tokens == 128 * 64
    assert peak == pytest.approx(2370, rel=0.05)


def test_speculation_speeds_up_a_single_stream(spec):
    single, unused = measure_throughput(spec.port, 1, 2, 64)
    assert single > 1.6 * 63.6, single
