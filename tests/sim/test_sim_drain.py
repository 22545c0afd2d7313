"""server_drain's loop (plugins/module_utils/_server/drain.py) against simulated SGLang and vLLM
servers with streams in flight: it waits for the server's own count to reach 0, ends within
0.5 s of the last request's end (the client's own end time), and fails a drain that runs out of
time with the count. Each test starts its own server and kills only its process group."""
import time

import pytest
from _server_fixtures import Server, VllmServer

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient
from ansible_collections.gpufleet.serving.plugins.module_utils._server.drain import drain_server, read_in_flight
from tests.support import sse_client
from tests.support.polling import poll

STREAMS = 4
TOKENS = 90  # ~1.5 s a stream at the simulators' single-stream rates


def _start(engine, tmp_path):
    if engine == "sglang":
        return Server(tmp_path, [], tp=1).wait_ready()
    return VllmServer(tmp_path, None, tp=1).wait_ready()


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_drain_ends_with_the_last_request(tmp_path, engine):
    server = _start(engine, tmp_path)
    try:
        url = "http://127.0.0.1:%d" % server.port
        params = {"base_url": url, "engine": "auto", "drain_timeout": 0.3, "poll_interval": 0.1,
                  "request_timeout": 2}
        client = HttpClient(url, accept=None)
        streams = sse_client.Streams(server.port)
        for i in range(STREAMS):
            streams.start(i, TOKENS)
        poll(lambda: sum(read_in_flight(client, registry.get(engine))) == STREAMS, 10,
             what="%d requests in flight" % STREAMS)
        with pytest.raises(GpuFleetError, match="still has %d requests in flight" % STREAMS) as err:
            drain_server(params)
        assert err.value.result["engine"] == engine and not err.value.result["drained"]

        out = drain_server(dict(params, drain_timeout=30))
        returned = time.monotonic()
        results = streams.join(10)
        assert all(r["done"] and len(r["texts"]) == TOKENS for r in results.values()), results
        lag = returned - streams.last_end()
        assert -0.2 < lag < 0.5, lag
        assert out["drained"] and out["in_flight"] == 0 and out["series"][0]["in_flight"] == STREAMS
        assert out["series"][-1]["in_flight"] == 0
    finally:
        server.stop()
