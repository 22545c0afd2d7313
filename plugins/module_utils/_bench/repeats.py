# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A level run N times: the mean and a 95% confidence interval of its headline figures.

The interval is Student's t for a small sample: mean +- t(0.975, n-1) * s / sqrt(n), with s
the sample standard deviation (n - 1 in the denominator). The hosts have no scipy, so the
two-sided 95% quantiles are tabulated here (any statistics table; e.g. t(0.975, 4) = 2.776).
"""

from __future__ import annotations

import math

# t(0.975, df) for df = 1..30, then the usual coarser steps; above 120 the normal 1.960.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
        18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
        26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}

# The figures given per repeat and as an interval: (name in the result, how to read a level).
FIGURES = (
    ("output_tok_s", lambda lv: lv.get("output_tok_s")),
    ("ttft_p50_ms", lambda lv: (lv.get("ttft_ms") or {}).get("p50")),
    ("accept_length", lambda lv: lv.get("accept_length")),
    ("ttft_p99_ms", lambda lv: (lv.get("ttft_ms") or {}).get("p99")),
    ("tpot_p50_ms", lambda lv: (lv.get("tpot_ms") or {}).get("p50")),
    ("tpot_p99_ms", lambda lv: (lv.get("tpot_ms") or {}).get("p99")),
)
# Latency percentiles (stats.percentiles dicts) and rates: the mean over the runs of what each run
# measured, so a latency figure and a latency gate use every run, not the first alone.
PER_RUN_MEANS = ("ttft_ms", "tpot_ms", "itl_ms", "itl_chunk_ms", "latency_ms")
RATE_MEANS = ("requests_per_s", "goodput_req_s")


# The counts of a level that add up over its runs (stats.level_metrics).
COUNTS = ("requests", "warmup_requests", "completed", "failed", "output_tokens", "counted_output_tokens",
          "failed_output_tokens", "usage_suspect", "input_tokens")
# Distinct error samples kept over the runs of a level.
MAX_ERRORS = 10


def t975(df: int) -> float:
    """The two-sided 95% Student t quantile for DF degrees of freedom (the next lower
    tabulated df between table rows: a slightly wider, never narrower, interval)."""
    if df < 1:
        raise ValueError("degrees of freedom must be >= 1")
    if df > 120:
        return 1.960
    return T975[max(k for k in T975 if k <= df)]


def interval(values: list) -> dict | None:
    """{"n", "mean", "low", "high"} of VALUES (None entries left out); low/high null for one
    value; None for none."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return None
    n = len(xs)
    mean = sum(xs) / n
    if n == 1:
        return {"n": 1, "mean": round(mean, 3), "low": None, "high": None}
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": round(mean, 3), "low": round(mean - half, 3), "high": round(mean + half, 3)}


def combine(runs: list) -> dict:
    """One level of RUNS (the level's results, in the order run): the first run's figures,
    with output_tok_s, accept_length, the rates (RATE_MEANS) and each latency percentile
    (PER_RUN_MEANS: each run's percentile, averaged) replaced by their means over the runs, the counts
    (COUNTS: requests, completed, failed, ...) summed over the runs and the error samples of
    every run, so a failure of any run shows and is gated; and `repeats`: each run's figures,
    its completed and failed counts, and the interval of each figure."""
    level = dict(runs[0])
    per_run = [dict({name: read(lv) for name, read in FIGURES}, completed=lv.get("completed"),
                    failed=lv.get("failed")) for lv in runs]
    cis = {name: interval([r[name] for r in per_run]) for name, _read in FIGURES}
    for name in ("output_tok_s", "accept_length"):
        if cis[name] is not None:
            level[name] = cis[name]["mean"]
    for name in PER_RUN_MEANS:
        dicts = [lv[name] for lv in runs if isinstance(lv.get(name), dict)]
        if dicts:
            level[name] = {key: _mean([d.get(key) for d in dicts]) for key in dicts[0]}
    for name in RATE_MEANS:
        if name in level:
            level[name] = _mean([lv.get(name) for lv in runs])
    for name in COUNTS:
        if name in level:
            level[name] = sum(lv.get(name) or 0 for lv in runs)
    if level.get("goodput_requests") is not None:  # None: no SLO was given
        level["goodput_requests"] = sum(lv.get("goodput_requests") or 0 for lv in runs)
    if "errors" in level:
        errors = []
        for lv in runs:
            errors += [e for e in lv.get("errors") or () if e not in errors]
        level["errors"] = errors[:MAX_ERRORS]
    level["repeats"] = dict(cis, n=len(runs), runs=per_run)
    return level


def _mean(values: list) -> float | None:
    """The mean of the values present (a run where nothing completed has none), 3 decimals."""
    xs = [float(v) for v in values if v is not None]
    return round(sum(xs) / len(xs), 3) if xs else None


def significant(a: dict | None, b: dict | None) -> bool | None:
    """Whether two intervals A and B (of interval()) do not overlap; None when either has
    no interval (fewer than two runs)."""
    if not a or not b or a.get("low") is None or b.get("low") is None:
        return None
    return a["high"] < b["low"] or b["high"] < a["low"]
