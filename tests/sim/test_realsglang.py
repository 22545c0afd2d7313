"""sim/realsglang.py and what the simulator takes from real SGLang 0.5.23.

Parsing runs in this process; the process-level checks (titles, entry points, the log
lines, /server_info, /metrics) start a few simulated servers on loopback.
"""
import importlib.util
import os
import sys

import psutil
import pytest
import realsglang
from _server_fixtures import KIMI, Server

from tests.support import paths
from tests.support.net import free_port_with

# The simulator's port plan by its path: importing `sglang` here would pin the package.
_SPEC = importlib.util.spec_from_file_location(
    "sim_sglang_ports", os.path.join(paths.SIM, "pypath", "sglang", "_sim", "ports.py"))
_ports = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_ports)

SIM = paths.SIM
ARGV = ["--model-path", "/models/m", "--tp-size", "2", "--api-key", "k"]


def test_pinned_version_is_installed_and_reported():
    assert realsglang.installed_version() == realsglang.pinned_version() == "0.5.23"
    realsglang.server_args_module()
    import sglang  # the simulator's package, which reports the pinned version as real does
    assert sglang.__version__ == realsglang.pinned_version()


def test_neither_sglang_shadows_the_other():
    real = realsglang.server_args_module()
    import sglang
    import sglang.launch_server as launch
    from sglang._sim import server
    sim_pkg = os.path.join(SIM, "pypath", "sglang")
    assert os.path.dirname(server.__file__).startswith(sim_pkg)
    assert os.path.dirname(launch.__file__) == sim_pkg
    assert real.__file__.startswith(os.path.join(realsglang.REAL_ROOT, "sglang", "srt"))
    assert sglang.__path__[0] == sim_pkg and sglang.__path__[-1] == os.path.join(realsglang.REAL_ROOT, "sglang")


def test_only_torch_and_triton_are_stand_ins():
    realsglang.server_args_module()
    import standins
    import torch
    import triton
    for module in (torch, triton):
        assert isinstance(module, standins._Module)  # pylint: disable=protected-access
    assert torch.cuda.is_available() is False and not hasattr(torch, "npu")
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("torch", "triton"):
            assert isinstance(module, standins._Module), name  # pylint: disable=protected-access
    assert not os.path.exists(os.path.join(paths.REPO, "plugins", "standins"))


def test_parse_returns_the_real_record():
    result = realsglang.parse(ARGV)
    assert result.code == 0, result.message
    assert (result.args.tp_size, result.args.api_key, result.args.port) == (2, "k", 30000)
    assert result.args.launch_command == " ".join(ARGV)  # real keeps the key in it
    assert type(result.args).__module__ == "sglang.srt.server_args"


def test_parse_refusal_is_sglangs_exit_and_message():
    result = realsglang.parse(ARGV + ["--cuda-graph-max-bs", "8"])
    assert result.args is None and result.code == 2
    assert result.message.startswith("usage: sglang serve")
    assert result.message.rstrip().endswith(
        "sglang serve: error: ambiguous option: --cuda-graph-max-bs could match "
        "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill")


def test_config_file_as_real(tmp_path):
    good = tmp_path / "a.yaml"
    good.write_text("api-key: from-file\ntp-size: 4\nenable-metrics: true\n")
    result = realsglang.parse(["--model-path", "/m", "--config", str(good), "--tp-size", "2"])
    assert result.code == 0, result.message
    # keys are flags verbatim; the command line wins over the file
    assert (result.args.api_key, result.args.tp_size, result.args.enable_metrics) == ("from-file", 2, True)
    bad = tmp_path / "b.yaml"
    bad.write_text("api_key: s3cret\n")
    result = realsglang.parse(["--model-path", "/m", "--config", str(bad)])
    assert result.code == 2 and "unrecognized arguments: --api_key s3cret" in result.message
    other = tmp_path / "c.toml"
    other.write_text("x = 1\n")
    result = realsglang.parse(["--model-path", "/m", "--config", str(other)])
    assert result.code == 1 and "Config file must be YAML format, got: .toml" in result.message


def test_serve_entry_takes_a_positional_model_and_drops_model_type():
    result = realsglang.parse(["/models/m", "--model-type", "llm", "--tp", "2"], entry="serve")
    assert result.code == 0 and result.args.model_path == "/models/m" and result.args.tp_size == 2
    assert realsglang.parse(["--model-type"], entry="serve").code == 1


def test_parse_leaves_no_logging_handler_behind():
    import logging
    before = list(logging.getLogger().handlers)
    realsglang.parse(ARGV)
    assert logging.getLogger().handlers == before


def test_log_line_and_server_info_carry_the_key_as_real():
    realsglang.server_args_module()
    from sglang._sim import args as simargs
    from sglang._sim import serverargs
    args = simargs.parse(ARGV + ["--cuda-graph-max-bs-decode", "16"])
    serverargs.resolve(args, lambda msg: None)
    line = serverargs.log_line(args)
    assert line.startswith("server_args={'model_path': '/models/m', ")
    assert "'api_key': 'k'" in line and "'cuda_graph_max_bs_decode': 16" in line
    assert "'mem_fraction_static': 0.85" in line  # resolved by the simulator's imitation
    info = serverargs.server_info(args)
    assert info["api_key"] == "k" and info["launch_command"].endswith("--cuda-graph-max-bs-decode 16")


@pytest.mark.parametrize("tp, dp, rank, title, prefix", [
    (1, 1, 0, "sglang::scheduler", ""),
    (8, 1, 7, "sglang::scheduler_TP7", " TP7"),
    (1, 2, 1, "sglang::scheduler_DP1", " DP1"),
    (2, 2, 2, "sglang::scheduler_DP1_TP0", " DP1 TP0"),
])
def test_scheduler_titles(tp, dp, rank, title, prefix):
    realsglang.server_args_module()
    from sglang._sim import worker
    conf = {"tp_size": tp, "dp_size": dp}
    assert worker.scheduler_title(rank, conf) == title
    assert worker.scheduler_prefix(rank, conf) == prefix


def test_metrics_count_finished_requests_per_stream():
    realsglang.server_args_module()
    from _simcore import engine
    from sglang._sim import metrics
    stats = engine.Stats()
    req = engine.Request("r1", 7, 10, True, "x", 0.0)
    req.take(10)
    req.spec_verify_ct = 4
    req.streaming = True
    probe = engine.Request("health", 1, 1, True, "y", 0.0)
    probe.take(1)
    probe.log_metrics = False
    stats.finish(req)
    stats.finish(probe)
    text = metrics.render(stats, 'kimi "k2"', 4, tp_size=2)
    # Labels sorted by name, as prometheus_client writes them.
    assert ('sglang:generation_tokens_total{engine_type="unified",is_streaming="true",'
            'model_name="kimi \\"k2\\""} 10.0') in text
    assert 'is_streaming="false",model_name="kimi \\"k2\\""} 0.0' in text
    assert 'sglang:spec_verify_calls_total{engine_type="unified",model_name="kimi \\"k2\\""} 4.0' in text
    # Only attention-TP rank 0's scheduler exports its gauges (scheduler.py metrics_enabled).
    assert text.count("sglang:spec_accept_length{") == 1
    assert "moe_ep_rank=\"0\",pp_rank=\"0\",tp_rank=\"0\"" in text


# --- processes ----------------------------------------------------------------------------

@pytest.fixture
def start(tmp_path):
    """Start simulated servers (each in a directory of its own); all are stopped after."""
    started = []

    def run(args, **kw):
        where = tmp_path / str(len(started))
        where.mkdir()
        started.append(Server(where, list(args), **kw))
        return started[-1]

    yield run
    for server in reversed(started):
        server.stop()


def _titles(server):
    titles = (" ".join(c.cmdline()).strip() for c in psutil.Process(server.pid).children())
    return sorted(t for t in titles if t.startswith("sglang::"))


def test_sglang_serve_at_tp1(start):
    s = start([], tp=1, entry="serve")
    s.wait_ready()
    cmdline = " ".join(psutil.Process(s.pid).cmdline())
    assert " serve --model-path " in cmdline and "/sglang serve" in cmdline
    assert _titles(s) == ["sglang::detokenizer", "sglang::scheduler"]
    log = s.log()
    assert "recommended entrypoint" not in log
    assert "] Init parallel begin." in log and " TP0]" not in log  # no rank prefix at TP1
    assert "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1" in log
    assert '"GET /model_info HTTP/1.1" 200' in log and '"POST /generate HTTP/1.1" 200' in log
    assert s.request("GET", "/ready")[0] == 200


def test_launch_server_warns_and_dp_has_a_controller(start):
    s = start(["--dp-size", "2"], tp=2)
    s.wait_ready()
    assert _titles(s) == ["sglang::data_parallel_controller", "sglang::detokenizer",
                          "sglang::scheduler_DP0_TP0", "sglang::scheduler_DP0_TP1",
                          "sglang::scheduler_DP1_TP0", "sglang::scheduler_DP1_TP1"]
    log = s.log()
    assert log.index("UserWarning: 'python -m sglang.launch_server' is still supported, but "
                     "'sglang serve' is the recommended entrypoint.") < log.index("server_args={")
    assert " DP1 TP1] Init parallel begin." in log


def test_tokenizer_workers_carry_their_pid_in_the_title(start):
    s = start(["--tokenizer-worker-num", "2"], tp=1)
    s.wait_ready()
    workers = [c for c in psutil.Process(s.pid).children()
               if " ".join(c.cmdline()).startswith("sglang::tokenizer_worker:")]
    assert sorted(" ".join(c.cmdline()).strip() for c in workers) == sorted(
        "sglang::tokenizer_worker:%d" % c.pid for c in workers) and len(workers) == 2


def test_ready_is_503_until_warm(start):
    s = start(["--sim-warmup-seconds", "1.5"], tp=1, model=KIMI)
    s.wait_log("Uvicorn running on")
    assert s.request("GET", "/ready")[0] == 503
    assert s.request("GET", "/health")[0] == 503
    s.wait_ready()
    assert s.request("GET", "/ready")[0] == 200


def test_relaunch_meets_sglangs_own_port_check(start):
    """Attention DP: the old server still holds its derived ports, so the new one waits
    SGLANG_WAIT_PORT_TIMEOUT seconds (real SGLang's wait_port_available), then gives up."""
    dp = ["--dp-size", "2", "--enable-dp-attention"]
    # Its derived ports (port + 233 and the six after) must be free too, not only --port: another
    # server of this run can hold one of them (seen in CI).
    derived = range(_ports.ZMQ_TCP_PORT_DELTA, _ports.ZMQ_TCP_PORT_DELTA + _ports.NUM_DERIVED_PORTS + 1)
    old = start(dp, tp=1, port=free_port_with(derived)).wait_ready()
    new = start(dp, tp=1, port=old.port, env={"SGLANG_WAIT_PORT_TIMEOUT": "1"})
    assert new.wait_exit(30) == 1
    log = new.log()
    dist_init_port = old.port + 233
    assert "Port is already in use. dist_init_port=%d port_base=%d" % (dist_init_port, dist_init_port + 1) in log
    assert "ValueError: dist_init_port at %d is not available in 1 seconds." % dist_init_port in log
    assert "Init parallel begin." not in log and old.request("GET", "/health")[0] == 200
