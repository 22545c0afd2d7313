"""The vLLM 0.33.0 simulator (sim/pypath/vllm): flag set, parse errors, process shape,
log lines, HTTP routes, metrics and the survivor trap, against the collection's modules."""
import importlib.util
import json
import os
import pathlib
import re
import signal
import socket
import subprocess

import psutil
import pytest
from _server_fixtures import VLLM_CLI, VLLM_PYTHON, VllmServer
from _server_fixtures import VLLM_READY as READY
from simlib import fakegpu, fleet_inventory

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import ENGINE_PATTERNS
from tests.support import paths, pidns, procfs, real_sources
from tests.support.ansible import run_module
from tests.support.polling import holds_within, poll

SIM = pathlib.Path(paths.SIM)
FLAGS_DIR = SIM / "pypath" / "vllm" / "_sim"
KIMI = str(SIM / "models" / "kimi-k2.5-int4")
EAGLE = str(SIM / "models" / "aq-medai-kimi-k2-eagle3")

# flags_gen.py loaded by path: its directory on sys.path would shadow modules named args, logs ...
_SPEC = importlib.util.spec_from_file_location("vllm_sim_flags_gen", FLAGS_DIR / "flags_gen.py")
flags_gen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(flags_gen)


def _real_vllm():
    """The directory holding the pinned vLLM's vllm/ (build/vllm-real, or GPUFLEET_REAL_VLLM)."""
    root = real_sources.vllm_sources().parent
    if not (root / flags_gen.ARG_UTILS).is_file():
        real_sources.missing("no %s under %s" % (flags_gen.ARG_UTILS, root))
    return str(root)


def test_flag_copy_matches_the_wheel():
    """flags.json is what flags_gen.py derives from the pinned wheel (regenerate it if not)."""
    derived, aliases = flags_gen.derive(_real_vllm())
    with open(FLAGS_DIR / "flags.json", encoding="utf-8") as f:
        stored = json.load(f)
    assert stored["flags"] == derived
    assert stored["aliases"] == aliases


def test_flag_copy_has_what_the_roles_use():
    with open(FLAGS_DIR / "flags.json", encoding="utf-8") as f:
        stored = json.load(f)
    flags = stored["flags"]
    for flag in ("--tensor-parallel-size", "--host", "--port", "--api-key", "--served-model-name",
                 "--gpu-memory-utilization", "--max-num-seqs", "--speculative-config", "--config"):
        assert flag in flags, flag
    assert stored["aliases"]["-tp"] == "--tensor-parallel-size"
    assert flags["--enforce-eager"] == "bool" and "--no-enforce-eager" in flags


def _serve(*argv, env=None, timeout=30):
    return subprocess.run([VLLM_CLI, "serve"] + list(argv), capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})), check=False)


@pytest.mark.parametrize("argv, needle", [
    # unknown flags: the top-level `vllm` parser reports them (vllm/entrypoints/cli/main.py)
    (["--bogus-flag", "1"], "\nvllm: error: unrecognized arguments: --bogus-flag 1"),
    (["--tp-size", "8"], "\nvllm: error: unrecognized arguments: --tp-size 8"),  # SGLang's spelling
    # bad values: the serve subparser
    (["--tensor-parallel-size", "two"],
     "vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'two'"),
    (["--speculative-config", "{not json"], "vllm serve: error: argument --speculative-config/-sc:"),
    # allow_abbrev is on in real vLLM: a prefix of two flags is ambiguous
    (["--max-num", "4"], "vllm serve: error: ambiguous option: --max-num could match"),
])
def test_parse_errors_exit_2_with_argparse_message(argv, needle):
    cp = _serve(KIMI, *argv)
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr.startswith("usage: vllm ")
    assert needle in cp.stderr


def test_config_file_must_be_yaml(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text("{}")
    cp = _serve(KIMI, "--config", str(bad))
    assert cp.returncode == 1
    assert "Config file must be of a yaml/yml type. json supplied" in cp.stderr


def test_config_yaml_flag_unknown_exits_2(tmp_path):
    conf = tmp_path / "c.yaml"
    conf.write_text("tp-size: 2\n")
    cp = _serve(KIMI, "--config", str(conf))
    assert cp.returncode == 2 and "vllm: error: unrecognized arguments: --tp-size 2" in cp.stderr


PRINT_ARGS = ("import json, sys; from vllm._sim import args; ns = args.parse(sys.argv[1:]); "
              "print(json.dumps({k: getattr(ns, k) for k in ('model', 'tp', 'port', 'api_keys', 'enforce_eager', "
              "'served_names', 'gpu_util', 'max_num_seqs', 'spec')}))")


def test_config_yaml_env_key_and_precedence(tmp_path):
    """cli > config > defaults (argparse_utils.py _pull_args_from_config); VLLM_API_KEY when no --api-key."""
    conf = tmp_path / "serve.yaml"
    conf.write_text("tensor-parallel-size: 2\nport: 9001\nenforce-eager: false\nmax_num_seqs: 16\n"
                    "speculative-config:\n  method: eagle3\n  num_speculative_tokens: 3\n")
    cp = subprocess.run([VLLM_PYTHON, "-c", PRINT_ARGS, KIMI, "--config", str(conf), "-tp", "4",
                         "--gpu_memory_utilization=0.8"], capture_output=True, text=True, timeout=30, check=False,
                        env=dict(os.environ, VLLM_API_KEY="from-env"))
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout) == {
        "model": KIMI, "tp": 4, "port": 9001, "api_keys": ["from-env"], "enforce_eager": False,
        "served_names": [KIMI], "gpu_util": 0.8, "max_num_seqs": 16,
        "spec": {"method": "eagle3", "num_speculative_tokens": 3}}


def test_module_entry_point_parses_too():
    cp = subprocess.run([VLLM_PYTHON, "-m", "vllm.entrypoints.cli.main", "serve", KIMI, "--nope"],
                        capture_output=True, text=True, timeout=30, check=False)
    assert cp.returncode == 2 and "unrecognized arguments: --nope" in cp.stderr


# --- a running simulated vLLM server ------------------------------------------------

ACCEPT = 2.6  # --sim-accept-length of the eagle3 server
SPEC = json.dumps({"method": "eagle3", "model": EAGLE, "num_speculative_tokens": 3})


def titles(proc_dir="/proc"):
    """{pid: cmdline} of every process under PROC_DIR (a namespace's /proc, or ours)."""
    out = {}
    for name in os.listdir(proc_dir):
        if name.isdigit():
            try:
                with open(os.path.join(proc_dir, name, "cmdline"), "rb") as f:
                    out[int(name)] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                pass
    return out


def tree_of(pid):
    """{pid: title} of PID and its live descendants (not zombies)."""
    found = {pid: " ".join(psutil.Process(pid).cmdline()).strip()}
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                found[child.pid] = " ".join(child.cmdline()).strip()
        except psutil.Error:
            pass
    return found


def used_mib(root):
    return {g["index"]: g["used_mib"] for g in fakegpu.read_status(root)}


@pytest.fixture
def started():
    servers = []
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def eagle(tmp_path_factory, fakenvml_lib):
    """One TP8 EAGLE-3 server with an API key on a fake 8-GPU host, shared by the tests below."""
    tmp = tmp_path_factory.mktemp("vllm-eagle")
    root = fakegpu.init(str(tmp / "host"), gpus=8, lib=fakenvml_lib)
    server = VllmServer(tmp, root, "--speculative-config", SPEC, "--api-key", "sekret",
                        "--served-model-name", "kimi", "--max-num-seqs", "64", "--sim-accept-length", str(ACCEPT),
                        "--sim-single-stream-tps", "2000", "--sim-peak-tps", "40000")
    server.root = root
    try:
        yield server.wait_ready()
    finally:
        server.stop()


def test_titles_memory_and_log_lines_in_order(eagle):
    tree = tree_of(eagle.proc.pid)
    names = sorted(t for t in tree.values() if t.startswith("VLLM::"))
    assert names == ["VLLM::EngineCore"] + ["VLLM::Worker_TP%d" % i for i in range(8)]
    api = tree[eagle.proc.pid]
    assert "console/vllm serve %s --tensor-parallel-size 8" % KIMI in api
    # each worker holds --gpu-memory-utilization (default 0.9) of its GPU's total
    status = fakegpu.read_status(eagle.root)
    assert all(abs(g["used_mib"] - int(0.9 * g["total_mib"])) <= 1 for g in status), status
    holders = {h["pid"] for g in status for h in g["holders"]}
    workers = {p for p, t in tree.items() if t.startswith("VLLM::Worker_TP")}
    assert holders == workers
    log = eagle.log()
    order = ["vLLM server version 0.33.0", "Initializing a V1 LLM engine (v0.33.0) with config:",
             "Starting to load model", "Model loading took", "GPU KV cache size:", "Capturing CUDA graphs",
             "Graph capturing finished in", "init engine (profile, create kv cache, warmup model) took",
             "Starting vLLM server on http://127.0.0.1:%d" % eagle.port, READY]
    positions = [log.index(text) for text in order]
    assert positions == sorted(positions), log
    assert "(EngineCore pid=" in log and "(Worker_TP0 pid=" in log and "(APIServer pid=" in log


def test_tp1_module_entry_point_runs_the_model_in_engine_core(tmp_path, started):
    server = VllmServer(tmp_path, None, tp=1, module=True)
    started.append(server)
    server.wait_ready()
    tree = tree_of(server.proc.pid)
    names = sorted(t for t in tree.values() if t.startswith("VLLM::"))
    assert names == ["VLLM::EngineCore"]  # UniProcExecutor: no worker process at TP 1
    # the API server (vllm\.entrypoints) and EngineCore are in the vllm engine's kill set
    # (multiprocessing's resource_tracker, a child as under real vLLM, is not: a descendant)
    ours = [t for t in tree.values() if "resource_tracker" not in t]
    assert len(ours) == 2 and all(any(re.search(p, t) for p in ENGINE_PATTERNS["vllm"]) for t in ours), tree


def test_key_guards_v1_only_and_models(eagle):
    assert eagle.request("GET", "/health")[0] == 200
    assert eagle.request("GET", "/metrics")[0] == 200
    status, body = eagle.request("GET", "/v1/models")
    assert (status, json.loads(body)) == (401, {"error": "Unauthorized"})
    status, body = eagle.request("GET", "/v1/models", headers={"Authorization": "Bearer sekret"})
    card = json.loads(body)["data"][0]
    assert status == 200 and card["id"] == "kimi" and card["owned_by"] == "vllm"


def _sse(raw):
    events = [line[6:] for line in raw.decode().split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_streams_with_usage_as_vllm_sends_it(eagle, path):
    auth = {"Authorization": "Bearer sekret"}
    body = {"model": "kimi", "max_tokens": 24, "ignore_eos": True, "stream": True}
    body.update({"prompt": "hello"} if path == "/v1/completions" else {"messages": [{"role": "user", "content": "hi"}]})
    status, raw = eagle.request("POST", path, body, auth)
    chunks = _sse(raw)
    assert status == 200 and all("usage" not in c for c in chunks)  # no usage without stream_options
    body["stream_options"] = {"include_usage": True}
    status, raw = eagle.request("POST", path, body, auth)
    chunks = _sse(raw)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 24
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    if path == "/v1/chat/completions":
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert chunks[0]["id"].startswith("chatcmpl-")


def _metrics(server):
    status, raw = server.request("GET", "/metrics")
    assert status == 200
    out = {}
    for line in raw.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name.split("{")[0]] = float(value)
    return out


def test_spec_decode_counters(eagle):
    before = _metrics(eagle)
    # temperature 0: the simulator's acceptance draws are seeded by the prompt, so this is deterministic
    eagle.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 300, "ignore_eos": True,
                                              "temperature": 0}, {"Authorization": "Bearer sekret"})
    after = _metrics(eagle)
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    assert delta["vllm:generation_tokens_total"] == 300
    drafts = delta["vllm:spec_decode_num_drafts_total"]
    assert delta["vllm:spec_decode_num_draft_tokens_total"] == 3 * drafts
    accept = 1 + delta["vllm:spec_decode_num_accepted_tokens_total"] / drafts
    assert accept == pytest.approx(300 / drafts)
    assert accept == pytest.approx(ACCEPT, abs=0.35)


def test_server_wait_reports_ready_with_vllm_phases(eagle):
    res = run_module("server_wait", {"url": eagle.url, "pid": eagle.proc.pid, "log_path": eagle.log_path,
                                     "timeout": 60})
    assert res["_rc"] == 0, res.get("msg")
    assert res["ready"] is True and res["flavor"] == "vllm"
    names = [p["name"] for p in res["phases"]]
    assert {"init", "loading_weights", "weights_loaded", "kv_cache", "cuda_graph", "cuda_graph_done",
            "engine_ready", "http_server"} <= set(names), names
    assert names[-1] == "ready"


def test_llm_benchmark_reads_acceptance_from_vllm_counters(eagle):
    res = run_module("llm_benchmark", {"base_url": eagle.url + "/v1", "api_key": "sekret", "levels": [4],
                                       "requests_per_level": 8, "input_len": 8, "output_len": 128})
    assert res["_rc"] == 0, res.get("msg")
    assert res["server"]["flavor"] == "vllm"
    level = res["levels"][0]
    assert level["accept_source"] == "metrics"
    assert level["accept_length"] == pytest.approx(ACCEPT, abs=0.3)
    # vllm:request_success_total (every finished_reason) grew by the level's requests.
    finished = level["server_req_s"] * level["level_span_s"]
    assert finished == pytest.approx(level["requests"] + level["warmup_requests"], abs=0.5)


@pytest.mark.parametrize("keep_alive", [True, False])
def test_health_503_when_the_engine_died(tmp_path, started, keep_alive):
    env = {"VLLM_KEEP_ALIVE_ON_ENGINE_DEATH": "1"} if keep_alive else {}
    server = VllmServer(tmp_path, None, "--sim-watchdog-seconds", "0.5", tp=2, env=env)
    started.append(server)
    server.wait_ready()
    assert server.request("GET", "/health")[0] == 200
    tree = tree_of(server.proc.pid)
    core = next(p for p, t in tree.items() if t == "VLLM::EngineCore")
    workers = [p for p, t in tree.items() if t.startswith("VLLM::Worker")]
    assert len(workers) == 2
    os.kill(core, signal.SIGKILL)
    poll(lambda: server.proc.poll() is not None or server.request("GET", "/health")[0] == 503, 10, 0.02,
         "/health to answer 503")
    # The workers follow their EngineCore (the parent-death signal), a moment after it, not with it.
    poll(lambda: not any(procfs.alive(p) for p in workers), 10, 0.02, "the workers to end with EngineCore")
    if keep_alive:
        assert not holds_within(lambda: server.proc.poll() is not None, 1.0)  # still up, still 503
        assert server.request("GET", "/health")[0] == 503
    else:  # the watchdog ends the API server
        poll(lambda: server.proc.poll() is not None, 10, 0.05, "the API server to exit")
        assert "EngineCore encountered an issue" in server.log() and "Application shutdown complete." in server.log()


def test_without_survivors_killing_the_api_server_ends_the_tree(tmp_path, started, root):
    server = VllmServer(tmp_path, root)
    started.append(server)
    server.wait_ready()
    tree = tree_of(server.proc.pid)
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(10)
    poll(lambda: not any(procfs.alive(p) for p in tree), 15, 0.05, "the tree to end")
    poll(lambda: set(used_mib(root).values()) == {0}, 10, 0.05, "the GPUs to be free")


@pytest.mark.skipif(not pidns.available(), reason="needs root, unshare, nsenter and tini")
def test_survivor_trap_released_by_vllm_patterns(tmp_path, root):
    """--sim-survivors: SIGKILL the API server, EngineCore and workers keep the GPUs;
    gpu_release with the vllm engine's patterns frees every GPU (in a PID namespace of its own)."""
    ns = pidns.PidNamespace()
    try:
        server = VllmServer(tmp_path, root, "--sim-survivors", launcher=ns.popen)
        server.wait_ready()
        api = poll(lambda: next((p for p, t in titles(ns.proc).items() if "console/vllm serve" in t), None),
                   10, 0.05, "the API server in the namespace")
        ns.run(["kill", "-9", str(api)], check=True)
        poll(lambda: not ns.alive(api), 10, 0.05, "the API server to die")
        left = {p: t for p, t in titles(ns.proc).items() if t.startswith("VLLM::")}
        assert sorted(left.values()) == ["VLLM::EngineCore"] + ["VLLM::Worker_TP%d" % i for i in range(8)]
        assert all(v > 80000 for v in used_mib(root).values())  # the survivors still hold the GPUs

        res = run_module("gpu_release", {"patterns": ENGINE_PATTERNS["vllm"]}, env=server.env, ns=ns)

        assert res["_rc"] == 0, res.get("msg")
        killed = {k["pid"]: k["cmdline"] for k in res["killed"]}
        assert set(killed) == set(left) and sorted(killed.values()) == sorted(left.values())
        assert all(g["free"] for g in res["gpus"]) and set(used_mib(root).values()) == {0}
    finally:
        ns.stop()


def test_start_fails_like_vllm_when_a_gpu_is_taken(tmp_path, started, root, procs):
    """Another process holds GPU 3: its rank refuses util x total (vllm/v1/worker/utils.py) and
    the launch fails with vLLM's engine start-up error, exit 1, nothing left holding memory."""
    procs.hold(root, [3], 40000)
    server = VllmServer(tmp_path, root)
    started.append(server)
    assert poll(lambda: server.proc.poll() is not None, 30, 0.05, "vllm serve to exit") and server.proc.returncode == 1
    log = server.log()
    assert "Free memory on device cuda:3 (" in log and "is less than desired GPU memory utilization (0.9," in log
    assert "RuntimeError: Engine core initialization failed. See root cause above." in log
    poll(lambda: used_mib(root) == {i: (40000 if i == 3 else 0) for i in range(8)}, 10, 0.05, "only the holder left")


@pytest.mark.parametrize("tp", [1, 8])
def test_warmup_crash_fails_after_capture_and_server_wait_names_it(tmp_path, started, root, tp):
    """VLLM_SIM_FAIL_WARMUP (sim_fleet's warmup_crash fault): the sampler warm-up after graph
    capture fails as vLLM 0.33.0 words it; server_wait ends at once with the cause, GPUs freed.
    TP 1 fails inside EngineCore (no fake GPUs: Kimi does not fit one), TP 8 in worker 0."""
    server = VllmServer(tmp_path, root if tp == 8 else None, "--max-num-seqs", "48", tp=tp,
                        env={"VLLM_SIM_FAIL_WARMUP": "1"})
    started.append(server)
    res = run_module("server_wait", {"url": server.url, "pid": server.proc.pid, "log_path": server.log_path,
                                     "timeout": 60})
    assert res["_rc"] != 0 and res["cause"]["kind"] == "oom", res
    assert "CUDA out of memory occurred when warming up sampler" in res["cause"]["line"], res["cause"]
    log = server.log()
    assert "Graph capturing finished" in log
    assert "CUDA out of memory occurred when warming up sampler with 48 dummy requests." in log
    assert "RuntimeError: Engine core initialization failed. See root cause above." in log
    assert "Application startup complete" not in log
    poll(lambda: set(used_mib(root).values()) == {0}, 10, 0.05, "the GPUs to be free")


def test_warmup_crash_message_is_the_wheels():
    """The simulated sampler warm-up failure, word for word as vLLM 0.33.0 builds it."""
    source = (pathlib.Path(_real_vllm()) / "vllm" / "v1" / "worker" / "gpu_model_runner.py").read_text()
    pieces = re.search(r'raise RuntimeError\(\s*"(CUDA out of memory occurred when warming up sampler with )"\s*'
                       r'f"\{num_reqs\}( dummy requests\. Please try lowering )"\s*"([^"]*)"\s*"([^"]*)"\s*\)', source)
    assert pieces, "the sampler warm-up message moved in the wheel"
    real = pieces.group(1) + "48" + "".join(pieces.groups()[1:])
    simulated = subprocess.run([VLLM_PYTHON, "-c", "from vllm._sim import engine_core as e; "
                                "print(e.SAMPLER_WARMUP_OOM % 48)"], capture_output=True, text=True, check=True)
    assert simulated.stdout.strip() == real


def test_port_taken_fails_before_the_engine_starts(tmp_path, started):
    """launcher.py setup_server binds the port before the engine: a taken port is an OSError at once."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = VllmServer(tmp_path, None, "--port", str(taken.getsockname()[1]), tp=2)
        started.append(server)
        assert poll(lambda: server.proc.poll() is not None, 20, 0.05, "vllm serve to exit") and server.proc.returncode == 1
    log = server.log()
    assert "OSError: [Errno 98] Address already in use" in log
    assert "Initializing a V1 LLM engine" not in log and "VLLM::" not in log


def test_the_simulated_fleet_lists_the_flags_each_simulator_models():
    """The experiment report's note of settings the simulated fleet does not model covers vLLM too:
    its list holds flags of vLLM's own spelling, each one the copied flag set knows, and leaves out
    --max-num-seqs (read for a message only, never a cap on the batch)."""
    models = fleet_inventory.simulator_models()
    with open(FLAGS_DIR / "flags.json", encoding="utf-8") as f:
        flags = json.load(f)["flags"]
    assert "--tensor-parallel-size" in models["vllm"] and "--speculative-config" in models["vllm"]
    assert "--max-num-seqs" not in models["vllm"] and "--tp-size" not in models["vllm"]
    assert all(flag in flags for flag in models["vllm"]), models["vllm"]
    assert "--cuda-graph-max-bs-decode" in models["sglang"] and "--tp-size" in models["sglang"]
