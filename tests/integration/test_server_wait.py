# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""server_wait, the real module through `ansible localhost`, against real server processes on 127.0.0.1.

The fake server (tests/support/servers/standin.py --log) can stop before turning ready or crashing
until the test creates its hold file; the test does that once the module's
progress file shows it is watching, so every latency below is measured, not slept.
"""

from __future__ import annotations

import socket

import pytest
from _wait_fixtures import (
    SIM_MODEL,
    SIM_PYTHON,
    SIM_VLLM,
    FakeServer,
    ModuleRun,
    median,
    progress_has,
    progress_time,
)

from tests.support.net import free_port
from tests.support.polling import poll
from tests.support.processes import OwnProcesses

NOTICE_S = 0.5  # the module must notice readiness (or a death) within this
OVERHEAD_S = 3.0  # ansible's own start-up/teardown around the module on this 2-core machine


@pytest.fixture
def procs():
    started = OwnProcesses()
    yield started
    started.stop_all(grace=5)


def start_wait(procs, server, tmp_path, check=False, **args):
    """Start the module on `server`; return once its progress file shows it is watching."""
    progress = tmp_path / ("progress-%d" % len(procs.popens))
    params = {"url": server.url, "pid": server.pid, "log_path": str(server.log), "progress_file": str(progress),
              "timeout": 60}
    params.update(args)
    params = dict((k, v) for k, v in params.items() if v is not None)  # a null still counts as "given"
    run = ModuleRun(procs, params, check=check)
    run.progress = progress
    poll(lambda: progress_has(progress, "waiting for") or run.proc.poll() is not None, 30, 0.01,
         "the module to start")
    return run


def test_ready_detection_latency(procs, tmp_path):
    noticed, returned, ended = [], [], []
    for attempt in range(3):
        server = FakeServer(procs, tmp_path, name="srv%d" % attempt, step=0.05, warmup=0.05)
        server.wait_port()
        run = start_wait(procs, server, tmp_path)
        # The module is polling a server that answers 503 (warm-up): now let it turn ready.
        poll(lambda: any(e.get("path") == "/health" and e["status"] == 503 for e in server.read_events()),  # noqa: B023
             10, 0.01, "a 503 health answer")
        server.release()
        rc, result = run.finish()
        assert rc == 0, run.stdout
        assert result["ready"] is True and result["health_status"] == 200
        ready_at = server.event("ready")["t"]
        requests = [e for e in server.read_events() if e["event"] == "request"]
        first_200 = [e["t"] for e in requests if e["path"] == "/health" and e["status"] == 200][0]
        noticed.append(first_200 - ready_at)
        returned.append(requests[-1]["t"] - ready_at)  # /model_info: the module's last act before exit_json
        ended.append(run.ended_at - ready_at)
        server.proc.terminate()
    print("\nready detection over %d runs: noticed median %.3f s (max %.3f), module done median %.3f s, "
          "ansible returned median %.3f s" % (len(noticed), median(noticed), max(noticed), median(returned),
                                              median(ended)))
    assert max(noticed) < NOTICE_S
    assert median(returned) < NOTICE_S + 0.2
    assert max(ended) < NOTICE_S + OVERHEAD_S


PHASES = {
    "sglang": ["init", "loading_weights", "weights_loaded", "kv_cache", "cuda_graph", "cuda_graph_done",
               "http_server", "warmup", "ready"],
    "vllm": ["init", "loading_weights", "weights_loaded", "kv_cache", "cuda_graph", "cuda_graph_done",
             "engine_ready", "http_server", "ready"],
}


def test_phases_model_info_and_generation(procs, tmp_path):
    flavor, expected = "sglang", PHASES["sglang"]  # vLLM's start-up: test_simulated_engine
    server = FakeServer(procs, tmp_path, step=0.3, warmup=0.2, api_key="k3y-s3cret")
    server.wait_port()
    server.release()
    run = start_wait(procs, server, tmp_path, generate_check=True, api_key="k3y-s3cret")
    rc, result = run.finish()
    assert rc == 0, run.stdout
    assert [p["name"] for p in result["phases"]] == expected
    assert result["engine"] == result["flavor"] == flavor
    assert result["phase"] == "ready"
    assert all(p["line"] and p["at"] >= 0 for p in result["phases"])
    # log_offset comes from the line's own timestamp (tqdm and uvicorn lines in vLLM logs have none)
    offsets = [p["log_offset"] for p in result["phases"] if p["log_offset"] is not None]
    assert len(offsets) >= 6 and offsets == sorted(offsets) and offsets[0] == 0.0
    assert result["generate"]["ok"] is True and result["generate"]["text"] == " world"
    assert result["generate"]["model"] == "tests/models/tiny-int4"
    assert result["model_info"]["model_path"] == "tests/models/tiny-int4"
    # The key went out as a bearer token (the server answers 401 without it) ...
    assert {e.get("auth") for e in server.read_events() if e["event"] == "request"} == {"Bearer k3y-s3cret"}
    # ... and never comes back, though the server logged it in server_args.
    assert "k3y-s3cret" in server.log.read_text()
    assert "k3y-s3cret" not in run.stdout + run.stderr
    assert "k3y-s3cret" not in run.progress.read_text()


CRASHES = [
    # crash, where, cause kind, words in the message, exit code seen (zombie status)
    ("oom", "load", "oom", "out of GPU memory -- torch.OutOfMemoryError: CUDA out of memory", -9),
    ("oom_kv", "kv", "oom", "Not enough memory. Please try to increase --mem-fraction-static", 1),
    ("warmup_error", "warmup", "warmup_error", "Initialization failed. warmup error", -9),
    ("exit3", "graph", "exited", "exited with code 3", 3),
    ("bad_argument", "load", "bad_argument", "launch_server.py: error: argument --tp-size", 2),
    ("silent_exit2", "graph", "bad_argument", "bad command-line argument (exit code 2)", 2),
    # a relaunch while the previous server still holds SGLang's ports (0.5.23's own check)
    ("ports_held", "ports", "ports_held", "SGLang's ports are still held", 1),
]


@pytest.mark.parametrize("crash,where,kind,words,code", CRASHES, ids=[c[0] for c in CRASHES])
def test_crash_fails_fast_with_cause_and_log_tail(procs, tmp_path, crash, where, kind, words, code):
    server = FakeServer(procs, tmp_path, crash=crash, crash_at=where, step=0.05, warmup=0.1)
    if crash != "bad_argument":
        server.wait_port()
    else:
        server.port = free_port()  # it dies before it has one
    run = start_wait(procs, server, tmp_path, log_tail_lines=5)
    server.release()
    rc, result = run.finish()
    died_at = server.event("died")["t"]
    failed_at = progress_time(run.progress, "FAILED")
    assert rc != 0, result
    assert result["cause"]["kind"] == kind
    assert result["cause"]["exit_code"] == code
    assert words in result["msg"]
    assert "died after" in result["msg"]
    assert 0 < len(result["log_tail"]) <= 5
    assert result["process"]["alive"] is False and result["process"]["pid"] == server.pid
    assert failed_at is not None and failed_at - died_at < NOTICE_S
    print("\n%s: death noticed %.3f s after the server died" % (crash, failed_at - died_at))


def test_crash_detection_latency_median(procs, tmp_path):
    latencies = []
    for attempt in range(3):
        server = FakeServer(procs, tmp_path, name="srv%d" % attempt, crash="oom", crash_at="graph", step=0.05)
        server.wait_port()
        run = start_wait(procs, server, tmp_path)
        server.release()
        rc, result = run.finish()
        assert rc != 0 and result["cause"]["kind"] == "oom"
        latencies.append(progress_time(run.progress, "FAILED") - server.event("died")["t"])
    print("\ncrash detection over %d runs: median %.3f s, max %.3f s" % (len(latencies), median(latencies),
                                                                         max(latencies)))
    assert max(latencies) < NOTICE_S


def test_address_in_use_while_health_hangs(procs, tmp_path):
    """An old listener holds the port and never answers: health requests hang, the bind fails."""
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen(16)
        server = FakeServer(procs, tmp_path, port=port, step=0.05)
        run = start_wait(procs, server, tmp_path, request_timeout=5)
        server.release()
        rc, result = run.finish()
    assert rc != 0
    assert result["cause"]["kind"] == "address_in_use"
    assert "address already in use" in result["msg"]
    assert result["cause"]["exit_code"] == 1
    # A 5 s health request was in flight; the death was still noticed at once.
    assert progress_time(run.progress, "FAILED") - server.event("died")["t"] < NOTICE_S


def test_timeout_reports_phase(procs, tmp_path):
    server = FakeServer(procs, tmp_path, step=0.05, warmup=0.05)  # never released: stuck in warm-up
    server.wait_port()
    poll(lambda: "server_args=" in server.log.read_text() and "model_info" in server.log.read_text(), 10, 0.01,
         "the server to reach warm-up")
    run = start_wait(procs, server, tmp_path, timeout=1.5)
    rc, result = run.finish()
    assert rc != 0
    assert result["cause"]["kind"] == "timeout"
    assert "not ready after" in result["msg"] and "phase: warmup" in result["msg"]
    assert "last health: HTTP 503" in result["msg"]
    assert 1.5 <= result["elapsed"] < 1.5 + NOTICE_S
    assert result["process"]["alive"] is True  # still running: the timeout, not a death


def test_pidfile_watch(procs, tmp_path):
    server = FakeServer(procs, tmp_path, crash="exit3", crash_at="warmup", step=0.05, warmup=0.1)
    server.wait_port()
    run = start_wait(procs, server, tmp_path, pid=None, pidfile=str(server.pidfile))
    server.release()
    rc, result = run.finish()
    assert rc != 0
    assert result["process"]["pid"] == server.pid
    assert result["cause"]["message"] == "exited with code 3"
    assert progress_time(run.progress, "FAILED") - server.event("died")["t"] < NOTICE_S


def test_pid_and_pidfile_are_exclusive(procs, tmp_path):
    run = ModuleRun(procs, {"url": "http://127.0.0.1:9", "pid": 1, "pidfile": str(tmp_path / "p")})
    rc, result = run.finish()
    assert rc != 0 and "mutually exclusive" in result["msg"]


def test_check_mode_reports_without_waiting(procs, tmp_path):
    server = FakeServer(procs, tmp_path, step=0.05, warmup=0.05)
    server.wait_port()
    poll(lambda: "model_info" in server.log.read_text(), 10, 0.01, "the server to reach warm-up")
    run = start_wait(procs, server, tmp_path, check=True, timeout=600)
    rc, result = run.finish()
    assert rc == 0
    assert result["ready"] is False and result["health_status"] == 503
    assert result["phase"] == "warmup"
    assert result["elapsed"] < 1.0  # one probe, not a 600 s wait
    server.release()
    poll(lambda: server.event("ready"), 10, 0.01, "the server to turn ready")
    run = start_wait(procs, server, tmp_path, check=True)
    rc, result = run.finish()
    assert rc == 0 and result["ready"] is True and result["changed"] is False


# What --sim-fail-warmup is on each engine: SGLang's warm-up request fails; vLLM's sampler
# warm-up after CUDA graph capture runs out of memory (gpu_model_runner.py _dummy_sampler_run).
WARMUP_FAILURE = {"sglang": "warmup_error", "vllm": "oom"}


def simulated_argv(engine, port, fail_warmup):
    """The real launch command line of a simulated engine on 127.0.0.1:PORT, fast start-up."""
    if engine == "sglang":
        argv = [str(SIM_PYTHON), "-m", "sglang.launch_server", "--model-path", str(SIM_MODEL), "--host", "127.0.0.1",
                "--port", str(port), "--tp-size", "1", "--sim-profile", "fast"]
    else:
        argv = [str(SIM_VLLM), "serve", str(SIM_MODEL), "--host", "127.0.0.1", "--port", str(port),
                "--tensor-parallel-size", "1", "--api-key", "k3y-s3cret"]
    return argv + (["--sim-fail-warmup"] if fail_warmup else [])


@pytest.mark.skipif(not SIM_PYTHON.exists(), reason="the simulated engines (sim/) are not in this checkout")
@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("fail_warmup", [False, True], ids=["ready", "warmup_error"])
def test_simulated_engine(procs, tmp_path, engine, fail_warmup):
    port = free_port()
    log = tmp_path / ("%s.log" % engine)
    with open(log, "ab") as out:
        server = procs.popen(simulated_argv(engine, port, fail_warmup), stdout=out, stderr=out,
                             stdin=open("/dev/null"))
    progress = tmp_path / "progress"
    params = {"url": "http://127.0.0.1:%d" % port, "pid": server.pid, "log_path": str(log),
              "generate_check": True, "progress_file": str(progress), "timeout": 120}
    if engine == "vllm":
        params["api_key"] = "k3y-s3cret"
    run = ModuleRun(procs, params)
    rc, result = run.finish()
    names = [p["name"] for p in result["phases"]]
    assert result["flavor"] == engine
    # SGLang warms up once uvicorn listens; vLLM's engine is warm before its HTTP server starts
    assert {"loading_weights", "kv_cache", "cuda_graph"} | ({"http_server"} if engine == "sglang" else set()) <= set(names)
    if fail_warmup:
        assert rc != 0 and result["cause"]["kind"] == WARMUP_FAILURE[engine], result["msg"]
    elif engine == "sglang":
        assert rc == 0, result.get("msg")
        assert names[-1] == "ready" and result["generate"]["ok"] is True
        assert result["model_info"]["model_path"] == str(SIM_MODEL)
    else:
        assert rc == 0, result.get("msg")
        assert names == PHASES["vllm"]
        assert result["generate"]["ok"] is True
        assert result["model_info"]["data"][0]["id"] == str(SIM_MODEL)
        # the key went out as a bearer token (the /v1 routes answer 401 without it) and never comes back
        assert "k3y-s3cret" not in run.stdout + run.stderr and "k3y-s3cret" not in progress.read_text()
