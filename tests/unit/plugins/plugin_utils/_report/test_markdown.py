# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/markdown.py: the swap report's numbers and ratios, latency tables and significance in words
(its PNG: test_plot.py; its files: test_files.py)."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.repeats import combine
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import markdown as rmd
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge as rm


def lv(c, tps, p50, p99, accept=None):
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": p50, "p99": p99},
            "accept_length": accept, "completed": 8, "failed": 0}


RESULTS = {
    "gpu01": {"baseline": {"levels": [lv(1, 63.6, 120.0, 130.0), lv(128, 2370.0, 900.0, 2100.0)]},
              "candidate": {"levels": [lv(1, 95.4, 110.0, 125.0, 3.1), lv(128, 2133.0, 950.0, 2300.0, 2.9)]}},
    "gpu02": {"baseline": {"levels": [lv(1, 64.0, 121.0, 131.0), lv(128, 2380.0, 910.0, 2110.0)]},
              "candidate": {"levels": [lv(1, 96.0, 111.0, 126.0, 3.0), lv(128, 2142.0, 951.0, 2301.0, 3.0)]}},
}


def table_rows(md, first_cell):
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in md.splitlines() if line.startswith("| %s " % first_cell)]


def test_markdown_summary_and_level_tables():
    md = rmd.render(rm.merge(RESULTS, "T", "sglang", "eagle3"), plot_name="benchmark.png")
    assert md.startswith("# T\n")
    rows = table_rows(md, "gpu01")
    assert rows[0] == ["gpu01", "sglang", "63.6", "2370.0", "128", "120.0 / 130.0", "900.0 / 2100.0", "-", "0"]
    assert rows[1] == ["gpu01", "eagle3", "95.4", "2133.0", "128", "110.0 / 125.0", "950.0 / 2300.0", "3.00", "0"]
    fleet = table_rows(md, "**fleet** (2 hosts)")
    assert fleet[0][2:5] == ["127.6", "4750.0", "128"]
    assert fleet[1][2:5] == ["191.4", "4275.0", "128"]
    # Fleet per-level: 191.4/127.6 = 1.50x, 4275/4750 = 0.90x
    assert table_rows(md, "1")[0][:4] == ["1", "127.6", "191.4", "1.50x"]
    assert table_rows(md, "128")[0][:4] == ["128", "4750.0", "4275.0", "0.90x"]
    # gpu01 per-level row at 128: ratio 2133/2370 = 0.90x, TTFT p50s, accept length
    assert ["128", "2370.0", "2133.0", "0.90x", "900.0", "950.0", "2.90"] in table_rows(md, "128")
    assert "![throughput against concurrency](benchmark.png)" in md


def full_lv(c, tps, rate=None, estimated=False):
    def q(p50, p99):
        return {"mean": p50, "p50": p50, "p90": p99, "p99": p99}
    return {"concurrency": c, "request_rate": rate, "output_tok_s": tps, "requests_per_s": 2.5,
            "goodput_req_s": 1.25, "server_tok_s": tps * 1.01, "server_ratio": 1.0,
            "itl_estimated": estimated, "ttft_ms": q(100.0, 200.0), "tpot_ms": q(15.0, 18.0),
            "itl_ms": q(14.0, 30.0), "latency_ms": q(1000.0, 1500.0), "accept_length": None,
            "completed": 8, "failed": 0}


def test_latency_table_has_every_figure_and_marks_estimates():
    results = {"h": {"baseline": {"levels": [full_lv(1, 60.0), full_lv(8, 400.0, estimated=True)]},
                     "candidate": {"levels": [full_lv(4, 200.0, rate=2.0)]}}}
    md = rmd.render(rm.merge(results, baseline_label="base", candidate_label="eagle"))
    assert "### h: latency by level" in md
    assert table_rows(md, "1")[-1] == ["1", "base", "60.0", "60.6 (1.0000)", "2.50", "1.25", "100.0 / 200.0",
                                       "15.0 / 18.0", "14.0 / 30.0", "1000.0 / 1500.0"]
    assert table_rows(md, "8")[-1][8] == "~14.0 / ~30.0"  # ITL estimate
    # an open-loop level is named by its rate and cap, not merged with a closed one
    assert table_rows(md, "2 req/s (max 4)")[-1][:3] == ["2 req/s (max 4)", "eagle", "200.0"]


def repeated(c, runs, accept=None):
    return combine([lv(c, tps, 100.0, 120.0, accept) for tps in runs])


@pytest.mark.parametrize("candidate_runs, words", [
    ((95.0, 96.0, 97.0), "significant: the 95% intervals do not overlap, so eagle3 is faster than sglang here"),
    ((60.0, 70.0, 80.0), "not significant at 95%: the intervals overlap"),
])
def test_a_speedup_is_significant_only_when_the_intervals_say_so(candidate_runs, words):
    # baseline 63, 64, 65: mean 64, s 1, t(0.975, 2) 4.303: 64 +- 2.484 = [61.5, 66.5]
    results = {"gpu01": {"baseline": {"levels": [repeated(1, (63.0, 64.0, 65.0))]},
                         "candidate": {"levels": [repeated(1, candidate_runs, 3.0)]}}}
    report = rm.merge(results, "T", "sglang", "eagle3")
    md = rmd.render(report)
    line = next(x for x in md.splitlines() if x.startswith("- concurrency 1: eagle3/sglang"))
    assert "vs 64.0 [61.5, 66.5] (mean [95% interval] of 3 and 3 runs)" in line
    assert words in line
    assert report["hosts"]["gpu01"]["ratio"][0]["significant"] is (candidate_runs[0] > 90)
