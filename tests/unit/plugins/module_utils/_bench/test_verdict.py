# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which requests count and which of their tokens: failed requests and lying usage."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import stats, verdict
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Record, request_body


def stream(counts, times=None, final=None, max_tokens=16, error=None, start=0.0):
    """A Record fed one content chunk per running count, then a usage-only chunk with `final`."""
    rec = Record()
    rec.start = start
    rec.max_tokens = max_tokens
    rec.on_status(200, {}, start)
    times = times or [start + 0.1 * (i + 1) for i in range(len(counts))]
    for t, c in zip(times, counts):
        rec.on_event(json.dumps({"choices": [{"text": " x"}], "usage": {"completion_tokens": c}}).encode(), t)
    if final is not None:
        rec.on_event(json.dumps({"choices": [], "usage": {"completion_tokens": final}}).encode(), times[-1])
    rec.on_end(times[-1] + 0.01)
    if error:
        rec.error = error
    return rec


def test_failed_requests_tokens_stay_out_of_tok_s_tpot_and_itl():
    good = [stream(range(1, 17), start=0.0) for unused in range(2)]
    cut = [stream(range(1, 6), start=0.0, error="ConnectionError: connection closed by server") for unused in range(2)]
    lv = stats.level_metrics(4, good + cut, 0, 5)
    assert (lv["completed"], lv["failed"]) == (2, 2)
    assert lv["output_tokens"] == 32 and lv["failed_output_tokens"] == 10
    assert lv["output_tok_s"] == pytest.approx(32 / lv["duration_s"], rel=1e-3)
    assert lv["itl_ms"]["p50"] == pytest.approx(100.0)


@pytest.mark.parametrize("counts, final, why", [
    ([1, 2, 3], 10 ** 12, "max_tokens"),
    ([1, 2, 3], -4, "negative"),
    ([1, 5, 3], 5, "decreas"),
    ([1, 2, 3], 2, "decreas"),
    ([None, None, None], 2, "content chunks"),
])
def test_lying_usage_is_flagged_and_the_content_count_used(counts, final, why):
    events = [c for c in counts if c is not None]
    rec = stream(events or [None] * 0, final=final) if events else _no_running(3, final)
    assert why in (verdict.usage_problem(rec) or ""), verdict.usage_problem(rec)
    assert rec.tokens == 3  # one token per content chunk
    assert rec.ok
    lv = stats.level_metrics(1, [rec], 0, 5)
    assert lv["usage_suspect"] == 1 and lv["output_tokens"] == 3
    assert lv["output_tok_s"] < 100


def _no_running(n, final):
    rec = Record()
    rec.start = 0.0
    rec.max_tokens = 16
    rec.on_status(200, {}, 0.0)
    for i in range(n):
        rec.on_event(json.dumps({"choices": [{"text": " x"}]}).encode(), 0.1 * (i + 1))
    rec.on_event(json.dumps({"choices": [], "usage": {"completion_tokens": final}}).encode(), 0.35)
    rec.on_end(0.4)
    return rec


def test_honest_speculative_usage_is_trusted():
    rec = stream([3, 6, 7], final=7, max_tokens=7)
    assert verdict.usage_problem(rec) is None and rec.tokens == 7


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_max_tokens_read_back_from_the_request_body(api):
    assert verdict.requested_max_tokens(request_body(api, "m", 8, 37, 1, 0.0)) == 37
    assert verdict.requested_max_tokens(b'{"prompt": "say \\"max_tokens\\": 5"}') is None


def test_a_level_where_every_request_failed_has_no_rates():
    bad = [stream([1, 2], error="HTTP 500: boom") for unused in range(3)]
    lv = stats.level_metrics(1, bad, 0, 5)
    assert lv["completed"] == 0
    assert lv["output_tok_s"] is None and lv["requests_per_s"] is None and lv["output_tokens"] == 0
