"""Both simulators on SIGTERM, as the engines' wheels do it (sim/README.md, "Shutdown").

SGLang 0.5.23 drains with no deadline and keeps accepting requests (sglang/_sim/shutdown.py);
vLLM 0.33.0 aborts at once, or drains up to --shutdown-timeout and then cuts what is left
(vllm/_sim/shutdown.py). Each test starts its own server and kills only its process group.
"""
import os
import signal
import time

import pytest
from _server_fixtures import Server, VllmServer

from ansible_collections.gpufleet.serving.plugins.module_utils import _prom
from tests.support import sse_client
from tests.support.polling import poll


def _status(server, path):
    return server.request("GET", path)[0]


def _gauges(server, running, waiting):
    page = server.request("GET", "/metrics")[1].decode()
    return _prom.total(page, running), _prom.total(page, waiting)


def test_sglang_drains_with_no_deadline_and_keeps_accepting(tmp_path):
    s = Server(tmp_path, ["--enable-metrics", "--max-running-requests", "2"], tp=1)
    try:
        s.wait_ready()
        streams = sse_client.Streams(s.port)
        for i in range(3):  # ~1.5 s each at the simulated 63.6 tok/s; the third waits for a slot
            streams.start(i, 90)

        def two_and_one():
            load = s.json("GET", "/v1/loads")["loads"][0]
            return load if (load["num_running_reqs"], load["num_waiting_reqs"]) == (2, 1) else None

        assert poll(two_and_one, 10, what="2 running, 1 waiting in /v1/loads")["queues"]["waiting"] == 1
        assert _gauges(s, "sglang:num_running_reqs", "sglang:num_queue_reqs") == (2, 1)
        page = s.request("GET", "/v1/loads?format=prometheus&include=core")[1].decode()  # v1_loads.py
        assert (_prom.total(page, "sglang_num_running_reqs", dp_rank="0"),
                _prom.total(page, "sglang_num_waiting_reqs", dp_rank="0")) == (2, 1)
        os.kill(s.pid, signal.SIGTERM)
        poll(lambda: _status(s, "/health") == 503, 5, what="/health 503 while draining")
        assert _status(s, "/ready") == 503
        streams.start("late", 20)  # accepted while draining, as 0.5.23
        results = streams.join(30)
        assert all(r["done"] and len(r["texts"]) >= 20 and r["finish"] == "length" for r in results.values()), results
        assert s.wait_exit() == 0
        assert time.monotonic() - streams.last_end() < 5
        log = s.log()
        assert "Remaining number of requests 0" in log and "Health check request received during shutdown" in log
        poll(lambda: not s.group(), 10, what="the tree gone")
    finally:
        s.stop()


@pytest.mark.parametrize("timeout", [0, 2])
def test_vllm_shutdown_timeout(tmp_path, timeout):
    s = VllmServer(tmp_path, None, "--shutdown-timeout", str(timeout), tp=1)
    try:
        s.wait_ready()
        streams = sse_client.Streams(s.port)
        # at the simulated 82.5 tok/s: "short" ends within 2 s, "long" (~5 s) does not
        streams.start("short", 40)
        streams.start("long", 400)
        poll(lambda: _gauges(s, "vllm:num_requests_running", "vllm:num_requests_waiting") == (2, 0), 10,
             what="2 running requests in the gauges")
        signalled = time.monotonic()
        os.kill(s.proc.pid, signal.SIGTERM)
        poll(lambda: "[shutdown] API server: shutdown triggered" in s.log(), 5, what="the shutdown")
        if timeout:  # a request after SIGTERM is aborted at once (core.py _reject_add_in_shutdown)
            late = sse_client.stream(s.port, 20)
            assert late["finish"] == "abort" and late["texts"] == [""], late
            assert _status(s, "/health") == 200  # health.py: 503 only once the engine is dead
        results = streams.join(30)
        assert s.proc.wait(15) == 0
        short, long_ = results["short"], results["long"]
        if timeout == 0:  # both aborted at once, each with its last chunk
            assert short["finish"] == long_["finish"] == "abort" and long_["done"]
            assert long_["end"] - signalled < 1.0
        else:  # the short one ends, the long one is cut at the timeout
            assert short["done"] and short["finish"] == "length" and len(short["texts"]) == 40
            assert not long_["done"] and long_["finish"] is None
            assert timeout - 0.3 < long_["end"] - signalled < timeout + 1.5
            assert "force killing remaining processes count=1" in s.log()
        assert "[shutdown] EngineCore: start mode=%s" % ("abort" if timeout == 0 else "drain") in s.log()
    finally:
        s.stop()
