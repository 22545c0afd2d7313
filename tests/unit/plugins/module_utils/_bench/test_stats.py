# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Percentiles, per-token ITL, TPOT, throughput window and the sweep summary."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import stats as bs
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Record


def rec(start, first, chunk_times, cums, tokens, end=None, status=200, error=None):
    r = Record()
    r.start, r.first, r.status, r.error = start, first, status, error
    r.chunk_times = list(chunk_times)
    r.chunk_cum = list(cums)
    r.completion_tokens = tokens
    r.end = end if end is not None else (chunk_times[-1] if chunk_times else start)
    return r


@pytest.mark.parametrize("q, expected", [(0, 1.0), (50, 2.5), (90, 3.7), (99, 3.97), (100, 4.0)])
def test_percentile_interpolates_like_numpy(q, expected):
    assert bs.percentile([4.0, 1.0, 3.0, 2.0], q) == pytest.approx(expected)


def test_percentile_of_nothing_is_none():
    assert bs.percentile([], 50) is None
    assert bs.percentiles([]) == {"mean": None, "p50": None, "p90": None, "p99": None}


def test_itl_is_per_token_with_multi_token_chunks():
    # Chunks of 3, 3, 1 tokens; gaps 0.06 s and 0.02 s.
    r = rec(0.0, 0.05, [0.05, 0.11, 0.13], [3, 6, 7], 7)
    entries, source = bs.itl_entries(r)
    assert source == "usage"
    assert entries == pytest.approx([0.02, 0.02, 0.02, 0.02])


def test_itl_falls_back_to_average_without_running_usage():
    r = rec(0.0, 0.05, [0.05, 0.11, 0.17], [None, None, None], 9)
    entries, source = bs.itl_entries(r)
    assert source == "average"
    assert entries == pytest.approx([0.02, 0.02])  # 9 tokens over 3 chunks: 3 a chunk


def test_non_increasing_usage_is_not_trusted():
    r = rec(0.0, 0.05, [0.05, 0.11], [3, 3], 6)
    assert r.chunk_tokens()[1] == "average"


def test_level_metrics_window_tokens_and_tpot():
    ok1 = rec(10.0, 10.1, [10.1, 10.2, 10.3], [1, 2, 3], 3, end=10.31)
    ok2 = rec(10.0, 10.2, [10.2, 10.4], [2, 4], 4, end=10.5)
    bad = rec(10.1, None, [], [], None, end=10.2, status=500, error="HTTP 500: boom")
    lv = bs.level_metrics(2, [ok1, ok2, bad], warmup_count=2, max_error_samples=5, expected_output_len=4)
    assert lv["completed"] == 2 and lv["failed"] == 1
    assert lv["errors"] == ["HTTP 500: boom"]
    assert lv["duration_s"] == pytest.approx(0.5)
    assert lv["output_tokens"] == 7
    assert lv["output_tok_s"] == pytest.approx(14.0)
    assert lv["requests_per_s"] == pytest.approx(4.0)
    assert lv["ttft_ms"]["mean"] == pytest.approx(150.0)
    # TPOT: (0.31-0.1)/2 = 0.105 and (0.5-0.2)/3 = 0.1
    assert lv["tpot_ms"]["p50"] == pytest.approx(102.5)
    assert lv["short_outputs"] == 1
    assert lv["itl_token_source"] == {"usage": 2, "average": 0}


def test_error_samples_are_distinct_and_bounded():
    bads = [rec(0.0, None, [], [], None, end=1.0, status=500, error="e%d" % (i % 3)) for i in range(10)]
    lv = bs.level_metrics(1, bads, 0, max_error_samples=2)
    assert lv["failed"] == 10
    assert lv["errors"] == ["e0", "e1"]
    assert lv["output_tok_s"] is None  # nothing completed: no rate, not a zero


def test_summary_picks_single_stream_and_peak():
    levels = [
        {"concurrency": 1, "output_tok_s": 63.6, "accept_length": None, "completed": 8, "failed": 0},
        {"concurrency": 64, "output_tok_s": 2400.0, "accept_length": 2.0, "completed": 128, "failed": 1},
        {"concurrency": 128, "output_tok_s": 2370.0, "accept_length": 3.0, "completed": 256, "failed": 0},
    ]
    s = bs.summary(levels)
    assert s["single_stream_tok_s"] == 63.6
    assert (s["peak_tok_s"], s["peak_concurrency"]) == (2400.0, 64)
    assert s["accept_length"] == 2.5
    assert (s["completed"], s["failed"]) == (392, 1)


def test_window_counts_the_warmups_tokens_inside_it():
    # Warm-up request: started at 0, streams 4 tokens at 0.5, 1.0, 1.5, 2.0 (1 a chunk).
    warm = rec(0.0, 0.5, [0.5, 1.0, 1.5, 2.0], [1, 2, 3, 4], 4, end=2.0)
    # Counted: 10.9-ish window from 1.0 to 3.0; 2 chunks of 3 tokens.
    counted = rec(1.0, 2.0, [2.0, 3.0], [3, 6], 6, end=3.0)
    lv = bs.level_metrics(2, [counted], 1, 5, warmup=[warm])
    assert lv["duration_s"] == pytest.approx(2.0)
    assert lv["counted_output_tokens"] == 6
    assert lv["output_tokens"] == 9  # warm-up tokens at 1.0, 1.5, 2.0 are inside
    assert lv["output_tok_s"] == pytest.approx(4.5)
    # The counted request, and 3 of the warm-up's 4 tokens: 1.75 requests' work in 2 s.
    assert lv["requests_per_s"] == pytest.approx(0.875)
    assert (lv["level_span_s"], lv["level_output_tokens"]) == (pytest.approx(3.0), 10)


def test_final_count_beyond_the_last_content_chunk_arrives_at_the_end():
    r = rec(0.0, 0.1, [0.1, 0.2], [2, 4], 5, end=0.3)  # one more token (EOS) in the final usage
    assert r.arrivals() == [(0.1, 2), (0.2, 2), (0.3, 1)]
    assert bs.tokens_between([r], 0.15, 0.3) == 3


def test_itl_estimates_are_never_mixed_with_per_token_values():
    exact = rec(0.0, 0.1, [0.1, 0.2, 0.3], [1, 2, 3], 3, end=0.3)
    guess = rec(0.0, 0.1, [0.1, 0.5], [None, None], 10, end=0.5)
    lv = bs.level_metrics(2, [exact, guess], 0, 5)
    assert lv["itl_token_source"] == {"usage": 1, "average": 1} and lv["itl_estimated"] is False
    assert lv["itl_ms"]["p99"] == pytest.approx(100.0)  # only the exact request's entries
    only = bs.level_metrics(1, [guess], 0, 5)
    assert only["itl_estimated"] is True and only["itl_ms"]["p50"] == pytest.approx(80.0)


def test_goodput_counts_requests_meeting_every_slo():
    fast = rec(0.0, 0.05, [0.05, 0.15], [1, 2], 2, end=0.15)   # TTFT 50 ms, TPOT 100 ms
    slow = rec(0.0, 0.30, [0.30, 0.35], [1, 2], 2, end=0.35)   # TTFT 300 ms, TPOT 50 ms
    lv = bs.level_metrics(2, [fast, slow], 0, 5, slo=(100.0, 120.0, None))
    assert lv["goodput_requests"] == 1
    assert lv["goodput_req_s"] == pytest.approx(1 / 0.35, rel=1e-3)
    assert bs.level_metrics(2, [fast, slow], 0, 5, slo=(None, 60.0, None))["goodput_requests"] == 1
    assert bs.level_metrics(2, [fast, slow], 0, 5)["goodput_requests"] is None


def test_requests_per_s_is_the_work_done_inside_the_window():
    # Concurrency 2, 4 tokens a request, one a chunk. Warm-ups W1 (0 -> 1.0, last token at
    # 0.95) and W2 (0 -> 1.5, tokens at 0.375, 0.75, 1.125, 1.5); counted requests start as a
    # slot frees: 1.0 -> 2.0, 1.5 -> 2.5, 2.0 -> 3.0, 2.5 -> 3.5. Window 1.0 -> 3.5 (2.5 s).
    warm = [rec(0.0, 0.25, [0.25, 0.5, 0.75, 0.95], [1, 2, 3, 4], 4, end=1.0),
            rec(0.0, 0.375, [0.375, 0.75, 1.125, 1.5], [1, 2, 3, 4], 4, end=1.5)]
    counted = [rec(s, s + 0.25, [s + 0.25, s + 0.5, s + 0.75, s + 1.0], [1, 2, 3, 4], 4, end=s + 1.0)
               for s in (1.0, 1.5, 2.0, 2.5)]
    lv = bs.level_metrics(2, counted, 2, 5, warmup=warm)
    assert lv["duration_s"] == pytest.approx(2.5)
    # 4 counted requests + half of W2 (2 of its 4 tokens inside) = 4.5 requests' work.
    # (Whole completions inside: 5 / 2.5 = 2.0; counted completions only: 4 / 2.5 = 1.6.)
    assert lv["requests_per_s"] == pytest.approx(1.8)
    # A failed request does no work that counts.
    failed = rec(1.5, None, [], [], None, end=2.5, status=500, error="HTTP 500: boom")
    lv = bs.level_metrics(2, counted[:1] + [failed] + counted[2:], 2, 5, warmup=warm)
    assert lv["requests_per_s"] == pytest.approx(3.5 / 2.5)


def test_per_chunk_itl_beside_the_per_token_one():
    # A speculative-like stream: chunks of 3, 2, 3 tokens with gaps 30 ms and 45 ms;
    # another request: chunks of 1, 3 tokens, gap 60 ms.
    a = rec(0.0, 0.10, [0.10, 0.13, 0.175], [3, 5, 8], 8)
    b = rec(0.0, 0.10, [0.10, 0.16], [1, 4], 4)
    lv = bs.level_metrics(2, [a, b], 0, 5)
    # Per chunk: 30, 45, 60 ms, one entry a gap.
    assert lv["itl_chunk_ms"] == {"mean": 45.0, "p50": 45.0, "p90": 57.0, "p99": 59.7}
    # Per token: 2 x 15 (30/2), 3 x 15 (45/3), 3 x 20 (60/3).
    assert lv["itl_ms"]["p50"] == pytest.approx(15.0)
    assert lv["itl_ms"]["mean"] == pytest.approx((5 * 15.0 + 3 * 20.0) / 8)
