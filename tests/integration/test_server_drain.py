"""server_drain through ansible-playbook against a simulated SGLang with streams in flight: the
endpoint group's defaults (URL, API key) reach it, a drain_timeout too short fails naming the
count, a long enough one returns drained with the count over time."""
import pathlib

import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient
from ansible_collections.gpufleet.serving.plugins.module_utils._server.drain import read_in_flight
from tests.support import paths, sse_client
from tests.support.ansible import run_playbook
from tests.support.net import free_port
from tests.support.polling import poll

STREAMS = 3
TOKENS = 600  # ~10 s a stream at the simulated 63.6 tok/s: still running when the play starts


def test_drain_through_a_playbook(procs, tmp_path):
    port = free_port()
    log = tmp_path / "sglang.log"
    with open(log, "ab") as out:
        procs.popen([paths.SIM_PYTHON, "-m", "sglang.launch_server", "--model-path",
                     str(pathlib.Path(paths.SIM_MODELS) / "kimi-k2.5-int4"), "--host", "127.0.0.1", "--port",
                     str(port), "--tp-size", "1", "--sim-profile", "fast", "--api-key", "k3y"],
                    stdout=out, stderr=out, stdin=open("/dev/null"))
    poll(lambda: "ready to roll" in log.read_text(), 60, what="the simulated SGLang to be ready")
    streams = sse_client.Streams(port, api_key="k3y")
    for i in range(STREAMS):
        streams.start(i, TOKENS)
    client = HttpClient("http://127.0.0.1:%d" % port, api_key="k3y", accept=None)
    poll(lambda: sum(read_in_flight(client, registry.get("sglang"))) == STREAMS, 10, what="the streams in flight")
    playbook = tmp_path / "drain.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Drain", "hosts": "localhost", "gather_facts": False,
        "module_defaults": {"group/gpufleet.serving.endpoint": {"base_url": "http://127.0.0.1:%d/v1" % port,
                                                                "api_key": "k3y"}},
        "tasks": [
            {"name": "Too short", "gpufleet.serving.server_drain": {"engine": "sglang", "drain_timeout": 0.2},
             "register": "short", "ignore_errors": True},
            {"name": "Long enough", "gpufleet.serving.server_drain": {"drain_timeout": 60}, "register": "full"},
            {"name": "Check", "ansible.builtin.assert": {"that": [
                "short is failed and not short.drained",
                "'still has %d requests in flight (%d running, 0 waiting)' in short.msg" % (STREAMS, STREAMS),
                "full.drained and full.in_flight == 0 and full.engine == 'sglang'",
                "full.series[0].in_flight == %d and full.series[-1].in_flight == 0" % STREAMS,
                "full.source == 'http://127.0.0.1:%d/v1/loads'" % port]}},
        ],
    }]))
    proc = run_playbook(playbook)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = streams.join(30)
    assert all(r["done"] and len(r["texts"]) == TOKENS for r in results.values()), results
