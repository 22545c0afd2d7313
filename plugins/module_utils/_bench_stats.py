# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-level metrics from request records, the way serving benchmarks define them.

- output tok/s: the server's usage counts of the level's counted requests over
  the level's wall time (first counted send to last counted end).
- TTFT: first non-empty content chunk. TPOT: (latency - TTFT) / (tokens - 1).
- ITL is per token: a chunk carrying k tokens after a gap g gives k entries of
  g/k, so speculative servers (several tokens per chunk) are not overstated.
"""

from __future__ import annotations

import math


def percentile(values, q):
    """Linear interpolation between closest ranks (numpy's default); None if empty."""
    if not values:
        return None
    vals = sorted(values)
    pos = (len(vals) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def describe(values, scale=1000.0):
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


def itl_entries(record):
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


def level_metrics(concurrency, counted, warmup_count, max_error_samples, expected_output_len=None):
    """The level's result dict from its counted Records (warm-up excluded by the caller)."""
    ok = [r for r in counted if r.ok]
    failed = [r for r in counted if not r.ok]
    starts = [r.start for r in counted if r.start is not None]
    ends = [r.end for r in counted if r.end is not None]
    duration = (max(ends) - min(starts)) if starts and ends else None
    tokens = sum(r.tokens for r in ok)
    prompt_tokens = sum(r.prompt_tokens or 0 for r in ok)

    ttft, tpot, latency, itl = [], [], [], []
    sources = {"usage": 0, "average": 0}
    for r in ok:
        ttft.append(r.first - r.start)
        latency.append(r.end - r.start)
        if r.tokens > 1:
            tpot.append((r.end - r.start - (r.first - r.start)) / (r.tokens - 1))
        entries, source = itl_entries(r)
        itl.extend(entries)
        if source:
            sources[source] += 1

    errors = []
    for r in failed:
        msg = r.error or "no output"
        if msg not in errors and len(errors) < max_error_samples:
            errors.append(msg)

    def rate(x):
        return round(x / duration, 3) if duration and duration > 0 else None

    return {
        "concurrency": concurrency,
        "requests": len(counted),
        "warmup_requests": warmup_count,
        "completed": len(ok),
        "failed": len(failed),
        "errors": errors,
        "duration_s": _round(duration, 4),
        "output_tokens": tokens,
        "input_tokens": prompt_tokens,
        "output_tok_s": rate(tokens),
        "requests_per_s": rate(len(ok)),
        "ttft_ms": describe(ttft),
        "itl_ms": describe(itl),
        "tpot_ms": describe(tpot),
        "latency_ms": describe(latency),
        # How per-chunk token counts were known, by request (see Record.chunk_tokens).
        "itl_token_source": sources,
        "usage_missing": sum(1 for r in ok if not r.usage_reported),
        "short_outputs": (
            sum(1 for r in ok if r.tokens < expected_output_len) if expected_output_len else 0
        ),
        "accept_length": None,
        "accept_source": None,
    }


def summary(levels):
    """Single-stream tok/s (level 1), the peak tok/s and its concurrency."""
    single = None
    peak = None
    for lv in levels:
        tps = lv.get("output_tok_s")
        if tps is None:
            continue
        if lv["concurrency"] == 1:
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
