# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-level metrics from request records, the way serving benchmarks define them.

- The window runs from the first counted request sent to the last counted
  request ended. output tok/s is every token of a completed request that arrived
  inside it, whichever request carried it (warm-up included: its tail streams inside the window and
  the server spent its time on it), over the window. Counting only the counted
  requests' tokens biased the figure low wherever request lengths vary
  (speculative decoding, EOS).
- request/s is the requests' work done inside the window, in requests, over
  the window: each completed request counts the share of its tokens that
  arrived inside it. A counted request counts 1 (it is sent and ends inside
  the window); a warm-up request still streaming when the window opens counts
  the share of it done inside. This is sglang.bench_serving's
  request_throughput (completed / benchmark_duration) when only the counted
  requests run in the window, and it keeps numerator and window on the same
  work when the warm-up overlaps it, as output tok/s does. Counting whole
  warm-up completions overstated the rate ((C-1) of them end inside the
  window at concurrency C); counting only the counted ones understated it
  (the warm-ups still hold slots when the window opens): 1-8% low on the
  simulated EAGLE-3 server.
- TTFT: first non-empty content chunk. TPOT: (latency - TTFT) / (tokens - 1).
- ITL is per token: a chunk carrying k tokens after a gap g gives k entries of
  g/k, so speculative servers (several tokens per chunk) are not overstated.
  k is the chunk's usage delta; a request without per-chunk usage only gives
  estimates (an even spread), used only when no request had per-chunk usage,
  and then flagged (`itl_estimated`).
- The per-chunk ITL (`itl_chunk_ms`) is the gap between consecutive content
  chunks, one entry a gap, as bench_serving's ITL (its `output.itl`): on a
  speculative server it is the time of one verify step, about accept length
  times the per-token ITL.
- Which requests completed and which tokens count (failed requests' tokens never;
  a suspect usage count replaced by the content count) is verdict.py's.
- goodput: counted requests meeting every SLO given, per second of the window
  (as sglang.bench_serving --goodput).
"""

from __future__ import annotations

import math
from typing import Any


def percentile(values: list, q: int) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); None if empty."""
    if not values:
        return None
    vals = sorted(values)
    pos = (len(vals) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def percentiles(values: list, scale: float = 1000.0) -> dict:
    """mean/p50/p90/p99 of seconds, as milliseconds (scale); Nones when empty."""
    if not values:
        return {"mean": None, "p50": None, "p90": None, "p99": None}
    vals = sorted(values)
    return {
        "mean": _round(sum(vals) / len(vals) * scale),
        "p50": _round(percentile(vals, 50) * scale),
        "p90": _round(percentile(vals, 90) * scale),
        "p99": _round(percentile(vals, 99) * scale),
    }


def _round(x, digits=3):
    return None if x is None else round(x, digits)


def itl_entries(record: Any) -> tuple:
    """Per-token inter-token gaps of one request, and how tokens per chunk were known."""
    times = record.chunk_times
    if len(times) < 2:
        return [], None
    ks, source = record.chunk_tokens()
    out = []
    for i in range(1, len(times)):
        k = ks[i]
        gap = times[i] - times[i - 1]
        if source == "usage":
            out.extend([gap / k] * int(k))
        else:
            # Average spread: the same k for every chunk; weight the gap once per chunk.
            out.append(gap / k)
    return out, source


def chunk_gaps(record: Any) -> list:
    """Gaps between consecutive content chunks of one request, one entry a gap."""
    times = record.chunk_times
    return [times[i] - times[i - 1] for i in range(1, len(times))]


def window_bounds(counted: list) -> tuple:
    """(start, end) of the measurement window: first counted send, last counted end."""
    starts = [r.start for r in counted if r.start is not None]
    ends = [r.end for r in counted if r.end is not None]
    if not starts or not ends:
        return None, None
    return min(starts), max(ends)


def tokens_between(records: list, start: float, end: float) -> float:
    """Tokens that arrived in [start, end], over all the records given."""
    total = 0.0
    for r in records:
        for t, k in r.arrivals():
            if t is not None and start <= t <= end:
                total += k
    return total


def requests_between(records: list, start: float, end: float) -> float:
    """Completed requests' work in [start, end], in requests: the share of each one's tokens
    that arrived inside."""
    total = 0.0
    for r in records:
        if not r.ok:
            continue
        arrivals = [(t, k) for t, k in r.arrivals() if t is not None]
        tokens = sum(k for unused, k in arrivals)
        if tokens > 0:
            total += sum(k for t, k in arrivals if start <= t <= end) / tokens
    return total


def _tpot(r):
    return (r.end - r.first) / (r.tokens - 1) if r.tokens > 1 else 0.0


def _good(r, slo):
    ttft_ms, tpot_ms, e2e_ms = slo
    return ((ttft_ms is None or (r.first - r.start) * 1000.0 <= ttft_ms)
            and (tpot_ms is None or _tpot(r) * 1000.0 <= tpot_ms)
            and (e2e_ms is None or (r.end - r.start) * 1000.0 <= e2e_ms))


def level_metrics(concurrency: int, counted: list, warmup_count: int, max_error_samples: int, expected_output_len: int | None = None,
                  warmup: list | tuple = (), slo: tuple = (None, None, None)) -> dict:
    """The level's result dict from its counted Records and its warm-up Records.

    slo: (ttft_ms, tpot_ms, e2e_ms) a request must meet to count in goodput; None = no bound.
    """
    ok = [r for r in counted if r.ok]
    failed = [r for r in counted if not r.ok]
    start, end = window_bounds(counted)
    duration = (end - start) if start is not None else None
    everything = [r for r in list(warmup) + list(counted) if r is not None]
    # Only completed requests' tokens are output (verdict.py); a failed one's are reported apart.
    tokens = tokens_between([r for r in everything if r.ok], start, end) if duration else 0.0
    tokens = int(round(tokens)) if abs(tokens - round(tokens)) < 1e-6 else round(tokens, 3)
    done = requests_between(everything, start, end) if duration else 0.0
    prompt_tokens = sum(r.prompt_tokens or 0 for r in ok)
    all_starts = [r.start for r in everything if r.start is not None]
    all_ends = [r.end for r in everything if r.end is not None]
    level_span = (max(all_ends) - min(all_starts)) if all_starts and all_ends else None

    ttft, tpot, latency = [], [], []
    itl = {"usage": [], "average": []}
    gaps = []
    sources = {"usage": 0, "average": 0}
    for r in ok:
        ttft.append(r.first - r.start)
        latency.append(r.end - r.start)
        if r.tokens > 1:
            tpot.append(_tpot(r))
        gaps.extend(chunk_gaps(r))
        entries, source = itl_entries(r)
        if source:
            itl[source].extend(entries)
            sources[source] += 1
    # Per-token ITL from usage when any request had it; estimates only when none did.
    itl_estimated = not sources["usage"] and bool(sources["average"])
    itl_values = itl["average"] if itl_estimated else itl["usage"]
    good = sum(1 for r in ok if _good(r, slo)) if any(x is not None for x in slo) else None

    errors = []
    for r in failed:
        msg = r.error or "no output"
        if msg not in errors and len(errors) < max_error_samples:
            errors.append(msg)

    def rate(x):
        # A level where nothing completed has no rate: a 0.0 would read as a measured result.
        return round(x / duration, 3) if ok and duration and duration > 0 else None

    return {
        "concurrency": concurrency,
        "requests": len(counted),
        "warmup_requests": warmup_count,
        "completed": len(ok),
        "failed": len(failed),
        "errors": errors,
        "duration_s": _round(duration, 4),
        "output_tokens": tokens,
        "counted_output_tokens": sum(r.tokens for r in ok),
        "failed_output_tokens": sum(r.tokens for r in failed),
        "usage_suspect": sum(1 for r in counted if r.usage_suspect),
        "input_tokens": prompt_tokens,
        "output_tok_s": rate(tokens),
        "requests_per_s": rate(done),
        "goodput_requests": good,
        "goodput_req_s": None if good is None else rate(good),
        "ttft_ms": percentiles(ttft),
        "itl_ms": percentiles(itl_values),
        "itl_chunk_ms": percentiles(gaps),
        "tpot_ms": percentiles(tpot),
        "latency_ms": percentiles(latency),
        # How per-chunk token counts were known, by request (see Record.chunk_tokens).
        "itl_token_source": sources,
        "itl_estimated": itl_estimated,
        # The whole level (warm-up included, nothing in flight at either edge): what the
        # server's own counter is compared with (_bench_run adds server_tok_s, server_ratio).
        "level_span_s": _round(level_span, 4),
        "level_output_tokens": sum(r.tokens for r in everything if r.chunk_times or r.usage_reported),
        "usage_missing": sum(1 for r in ok if not r.usage_reported),
        "short_outputs": (
            sum(1 for r in ok if r.tokens < expected_output_len) if expected_output_len else 0
        ),
        "accept_length": None,
        "accept_source": None,
    }


def summary(levels: list) -> dict:
    """Single-stream tok/s (level 1), the peak tok/s and its concurrency."""
    single = None
    peak = None
    for lv in levels:
        tps = lv.get("output_tok_s")
        if tps is None:
            continue
        if lv["concurrency"] == 1 and not lv.get("request_rate"):
            single = tps
        if peak is None or tps > peak["output_tok_s"]:
            peak = lv
    accepts = [lv["accept_length"] for lv in levels if lv.get("accept_length") is not None]
    return {
        "single_stream_tok_s": single,
        "peak_tok_s": peak["output_tok_s"] if peak else None,
        "peak_concurrency": peak["concurrency"] if peak else None,
        "accept_length": round(sum(accepts) / len(accepts), 3) if accepts else None,
        "completed": sum(lv["completed"] for lv in levels),
        "failed": sum(lv["failed"] for lv in levels),
    }
