"""The simulators' neutral core holds a third engine: toyserve (tests/support/engines/toyserve),
a fake engine that exists only in the tests, started as a real process on a fake 2-GPU host,
answers a streamed request from the collection's own benchmark client and counts its tokens
in /metrics; SIGTERM to its PID ends it and frees the fake GPUs."""
import os
import signal
import subprocess
import urllib.error
import urllib.request

import psutil
import pytest
from simlib import fakegpu

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import accept, client, load
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint
from tests.support import paths
from tests.support.net import free_port
from tests.support.polling import poll
from tests.support.processes import OwnProcesses

ENGINES = os.path.join(paths.SUPPORT, "engines")
MODEL = os.path.join(paths.SIM_MODELS, "kimi-k2.5-int4")
FRACTION = 0.5


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return None, ""


def _titles(pid):
    out = {}
    for child in psutil.Process(pid).children(recursive=True):
        try:
            out[child.pid] = " ".join(child.cmdline()).strip()  # setproctitle pads the title
        except psutil.Error:
            pass
    return out


@pytest.fixture
def procs():
    started = OwnProcesses()
    yield started
    started.stop_all(grace=5)


def test_toyserve_streams_counts_and_stops(procs, tmp_path, fakenvml_lib):
    root = fakegpu.init(str(tmp_path / "host"), gpus=2, lib=fakenvml_lib)
    port = free_port()
    env = dict(os.environ, **fakegpu.env(root))
    env["PYTHONPATH"] = os.pathsep.join([ENGINES, os.path.join(paths.SIM, "pypath")])
    log = tmp_path / "toyserve.log"
    argv = [paths.PYTHON, "-m", "toyserve", "serve", MODEL, "--port", str(port), "--host", "127.0.0.1",
            "--tp", "2", "--gpu-memory-fraction", str(FRACTION)]
    with open(log, "wb") as out:
        server = procs.popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = "http://127.0.0.1:%d" % port
    poll(lambda: _get(url + "/health")[0] == 200 or server.poll() is not None, 60, 0.05, "toyserve's /health")
    assert server.poll() is None, log.read_text()
    assert "ready to serve" in log.read_text()

    # Its process tree and fake GPU memory come from the core: one titled worker a GPU, each the holder.
    workers = {pid: title for pid, title in _titles(server.pid).items() if title.startswith("toyserve::")}
    assert sorted(workers.values()) == ["toyserve::worker_TP0", "toyserve::worker_TP1"]
    status = fakegpu.read_status(root)
    assert {h["pid"] for g in status for h in g["holders"]} == set(workers)
    assert all(abs(g["used_mib"] - int(FRACTION * g["total_mib"])) <= 1 for g in status), status

    models = _get(url + "/v1/models")[1]
    assert '"id": "%s"' % MODEL in models or '"id":"%s"' % MODEL in models
    before = accept.counter(accept.parse_prometheus(_get(url + "/metrics")[1]), "toyserve:generation_tokens")
    body = client.request_body("chat", MODEL, 16, 24, seed=3, temperature=0.0)
    [record] = load.run_level(Endpoint(url), "/v1/chat/completions", [body], level=1, timeout=30)
    assert record.error is None and record.done and record.status == 200
    assert record.completion_tokens == 24 and record.finish_reason == "length"
    after = accept.counter(accept.parse_prometheus(_get(url + "/metrics")[1]), "toyserve:generation_tokens")
    assert (before, after) == (0.0, 24.0)

    server.send_signal(signal.SIGTERM)  # by its PID
    assert server.wait(30) == 0, log.read_text()
    assert "stopping" in log.read_text()
    poll(lambda: not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                         for pid in workers), 10, 0.05, "the workers to end")
    # the fake GPU frees a dead holder's memory after its release delay, as a real driver does
    poll(lambda: all(g["used_mib"] == 0 and not g["holders"] for g in fakegpu.read_status(root)), 10, 0.05,
         "the fake GPUs to be free")
