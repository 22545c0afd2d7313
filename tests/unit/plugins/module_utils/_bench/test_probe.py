# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench/probe.py through the real sglang-router 0.3.2 in front of two stand-in servers
(tests/support/servers/standin.py): the ready file once the `before` load ran, every request
recorded with its outcome and latencies, the router's workers sampled (_router/sampling.py) while one
leaves it, the end after the stop file; outcomes of cut streams."""

from __future__ import annotations

import threading

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import probe
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Record
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry, sampling, workers
from tests.support.polling import poll
from tests.support.servers.launch import StandIn

KIND = registry.get("sglang-router")


@pytest.fixture
def standins():
    made = [StandIn("--rate", "400", "--ttft", "0.01") for unused in range(2)]
    yield made
    for server in made:
        server.stop()


def test_the_probe_loads_the_router_until_the_stop_file_and_samples_its_workers(router, standins, tmp_path):
    urls = [s.url for s in standins]
    started = router(urls)
    api = workers.client(started.url)
    stop, ready = tmp_path / "stop", tmp_path / "ready"
    run = probe.Probe(lambda when: sampling.sample_row(KIND, api, when), started.url, str(stop), str(ready), clients=2, output_len=20,
                      sample_interval=0.05, before_s=0.3, after_s=0.3, max_s=60)
    out = {}
    thread = threading.Thread(target=lambda: out.update(run.run()), daemon=True)
    thread.start()
    poll(ready.exists, timeout=30, interval=0.05, what="the ready file")
    workers.absent(KIND, api, urls[1], min_healthy=1)
    poll(lambda: any(s["healthy"] == urls[:1] for s in run.samples), timeout=30, interval=0.05,
         what="a sample with one healthy worker")
    stop.write_text("")
    thread.join(60)
    assert not thread.is_alive()
    assert out["stopped_s"] >= 0.3 and out["duration_s"] >= out["stopped_s"] + 0.3
    assert out["requests"] and {r["outcome"] for r in out["requests"]} == {"ok"}
    assert all(r["tokens"] == 20 and r["ttft"] > 0 and r["tpot"] > 0 for r in out["requests"])
    assert [r["start"] for r in out["requests"]] == sorted(r["start"] for r in out["requests"])
    assert out["samples"][0]["healthy"] == sorted(urls) and out["samples"][-1]["healthy"] == urls[:1]
    assert all(s["error"] is None for s in out["samples"])


@pytest.mark.parametrize("status, chunks, done, error, expected", [
    (200, [1.0], True, None, "ok"),
    (200, [1.0], False, "ConnectionError: connection closed by server", "broken"),
    (503, [], False, "HTTP 503: no_available_workers", "failed"),
    (None, [], False, "ConnectionRefusedError", "failed"),
])
def test_outcomes(status, chunks, done, error, expected):
    rec = Record()
    rec.status, rec.chunk_times, rec.chunk_cum, rec.done, rec.error = status, chunks, [None] * len(chunks), done, error
    rec.start, rec.first, rec.end = 0.0, (chunks[0] if chunks else None), 2.0
    assert probe.outcome(rec) == expected
    row = probe.request_row(rec, 0.0)
    assert row["outcome"] == expected and row["end"] == 2.0
