# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llm_benchmark against a server that misbehaves (tests/support/servers/hostile.py on loopback):
a bad request fails alone, its tokens stay out of the figures, lying usage is not believed,
and a run where nothing completed fails with the errors."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.run import run_benchmark
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from tests.support.servers import hostile
from tests.support.servers.launch import StandIn


@pytest.fixture
def bad_server():
    started = []

    def start(script, rate=400):
        s = StandIn("--script", script, "--rate", str(rate), script=hostile.__file__)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def params(url, **kw):
    p = dict(base_url=url, model=None, levels=[2], requests_per_level=12, warmup_requests=0, input_len=8,
             output_len=16, api="completions", temperature=0.0, seed=0, request_timeout=10.0, max_error_samples=10,
             api_key=None, validate_certs=True, output=None, engine="auto", request_rates=None, burstiness=1.0,
             max_concurrency=None, range_ratio=1.0, ignore_eos=True, slo_ttft_ms=None, slo_tpot_ms=None,
             slo_e2e_ms=None, connection="keep_alive", progress_file=None)
    p.update(kw)
    return p


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_malformed_events_fail_their_request_only(bad_server, api):
    names = sorted(hostile.MALFORMED)
    s = bad_server(",".join(["ok"] + ["bad:" + n for n in names]))
    n = 2 * (len(names) + 1)
    lv = run_benchmark(params(s.url, requests_per_level=n, api=api))["levels"][0]
    assert (lv["completed"], lv["failed"]) == (2, n - 2)
    assert lv["output_tokens"] == 2 * 16
    joined = " | ".join(lv["errors"])
    for key in ("choices is null", "choices is a str", "delta is a str", "usage is an int",
                "usage.completion_tokens is a str"):
        assert key in joined, joined


def test_cut_streams_tokens_are_reported_apart(bad_server):
    s = bad_server("ok,cut", rate=200)
    lv = run_benchmark(params(s.url))["levels"][0]
    assert (lv["completed"], lv["failed"]) == (6, 6)
    assert lv["output_tokens"] == 6 * 16 and lv["counted_output_tokens"] == 6 * 16
    assert lv["failed_output_tokens"] == 6 * 5
    assert lv["output_tok_s"] == pytest.approx(96 / lv["duration_s"], rel=0.01)


def test_a_timed_out_endless_stream_adds_nothing_to_tok_s(bad_server):
    s = bad_server("ok,endless", rate=200)
    lv = run_benchmark(params(s.url, levels=[1], requests_per_level=4, request_timeout=1.5))["levels"][0]
    assert (lv["completed"], lv["failed"]) == (2, 2)
    assert all(e.startswith("timeout after 1.5s") for e in lv["errors"])
    assert lv["output_tokens"] == 32 and lv["failed_output_tokens"] > 100
    assert lv["output_tok_s"] == pytest.approx(32 / lv["duration_s"], rel=0.01)
    assert lv["tpot_ms"]["p50"] == pytest.approx(5.0, rel=0.5)  # the good streams' pace, 200 tok/s


@pytest.mark.parametrize("kind", ["huge", "negative", "decreasing"])
def test_lying_usage_is_flagged_and_not_believed(bad_server, kind):
    s = bad_server("lie:" + kind)
    lv = run_benchmark(params(s.url, requests_per_level=4))["levels"][0]
    assert lv["completed"] == 4 and lv["usage_suspect"] == 4
    assert lv["output_tokens"] == 4 * 16  # the content count: one token a chunk
    assert lv["output_tok_s"] < 10 ** 6


@pytest.mark.parametrize("script, says", [("http500", "HTTP 500: "), ("empty", "no output")])
def test_every_request_failed_fails_the_run_with_the_errors(bad_server, script, says):
    s = bad_server(script)
    with pytest.raises(GpuFleetError) as caught:
        run_benchmark(params(s.url, levels=[1, 2], requests_per_level=4, api="chat"))
    exc = caught.value
    assert "every request of every level failed" in exc.msg and says in exc.msg
    levels = exc.result["levels"]
    assert [lv["completed"] for lv in levels] == [0, 0]
    assert all(lv["output_tok_s"] is None for lv in levels)
    assert exc.result["summary"]["peak_tok_s"] is None
