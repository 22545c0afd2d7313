# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The 95% confidence interval of repeated levels, against a hand-computed case."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import repeats as rp


def test_interval_by_hand():
    # 10, 12, 14, 16, 18: mean 14, s = sqrt((16 + 4 + 0 + 4 + 16) / 4) = sqrt(10) = 3.16228;
    # t(0.975, 4) = 2.776; half width 2.776 * 3.16228 / sqrt(5) = 3.92593.
    ci = rp.interval([10, 12, 14, 16, 18])
    assert ci == {"n": 5, "mean": 14.0, "low": 10.074, "high": 17.926}


def test_one_value_has_no_interval_and_none_are_left_out():
    assert rp.interval([5.0, None]) == {"n": 1, "mean": 5.0, "low": None, "high": None}
    assert rp.interval([None]) is None


@pytest.mark.parametrize("df, t", [(1, 12.706), (2, 4.303), (30, 2.042), (35, 2.042), (40, 2.021), (500, 1.96)])
def test_t_quantiles(df, t):
    assert rp.t975(df) == t


def test_combine_means_tok_s_acceptance_and_every_runs_latency():
    runs = [{"concurrency": 1, "output_tok_s": tps, "ttft_ms": {"p50": ttft, "p99": 2 * ttft},
             "tpot_ms": {"p50": ttft / 2, "p99": None if ttft == 24.0 else ttft}, "accept_length": acc,
             "completed": 8, "requests": 8, "goodput_requests": good, "goodput_req_s": good / 2.0,
             "requests_per_s": 4.0}
            for tps, ttft, acc, good in ((100.0, 20.0, 3.0, 8), (110.0, 22.0, 3.2, 6), (120.0, 24.0, 3.4, 7))]
    level = rp.combine(runs)
    assert level["output_tok_s"] == 110.0 and level["accept_length"] == 3.2
    # Every run's percentile, averaged (a run without one left out), so a latency gate sees every run.
    assert level["ttft_ms"] == {"p50": 22.0, "p99": 44.0}
    assert level["tpot_ms"] == {"p50": 11.0, "p99": 21.0}
    assert (level["goodput_requests"], level["requests"], level["goodput_req_s"]) == (21, 24, 3.5)
    assert level["repeats"]["ttft_p99_ms"]["mean"] == 44.0 and level["repeats"]["tpot_p99_ms"]["n"] == 2
    # s = 10, t(0.975, 2) = 4.303: 110 +- 4.303 * 10 / sqrt(3) = 110 +- 24.843
    assert level["repeats"]["output_tok_s"] == {"n": 3, "mean": 110.0, "low": 85.157, "high": 134.843}
    assert level["repeats"]["n"] == 3 and level["repeats"]["runs"][1]["ttft_p50_ms"] == 22.0


def test_significant_only_when_the_intervals_do_not_overlap():
    a = {"low": 90.0, "high": 110.0}
    assert rp.significant(a, {"low": 111.0, "high": 130.0}) is True
    assert rp.significant(a, {"low": 109.0, "high": 130.0}) is False
    assert rp.significant(a, {"low": None, "high": None}) is None


def test_combine_keeps_every_runs_failures():
    """HTTP 500s in runs 2 and 3 count in the level's failed, its errors and each run's entry."""
    runs = [{"concurrency": 8, "output_tok_s": 100.0, "ttft_ms": {"p50": 20.0}, "accept_length": None,
             "requests": 16, "completed": 16 - failed, "failed": failed, "errors": errors}
            for failed, errors in ((0, []), (2, ["HTTP 500"]), (3, ["HTTP 500", "timeout"]))]
    level = rp.combine(runs)
    assert (level["requests"], level["completed"], level["failed"]) == (48, 43, 5)
    assert level["errors"] == ["HTTP 500", "timeout"]
    assert [(r["completed"], r["failed"]) for r in level["repeats"]["runs"]] == [(16, 0), (14, 2), (13, 3)]
