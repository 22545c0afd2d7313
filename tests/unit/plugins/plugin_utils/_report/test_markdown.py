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
from tests.support.report_results import RESULTS, full_lv, lv


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


def test_latency_table_has_every_figure_and_marks_estimates():
    results = {"h": {"baseline": {"levels": [full_lv(1, 60.0), full_lv(8, 400.0, estimated=True)]},
                     "candidate": {"levels": [full_lv(4, 200.0, rate=2.0)]}}}
    md = rmd.render(rm.merge(results, baseline_label="base", candidate_label="eagle"))
    assert "### h: latency by level" in md
    assert table_rows(md, "1")[-1] == ["1", "base", "60.0", "-", "60.6 (1.0000)", "2.50", "1.25", "100.0 / 200.0",
                                       "15.0 / 18.0", "14.0 / 30.0", "1000.0 / 1500.0"]
    assert table_rows(md, "8")[-1][9] == "~14.0 / ~30.0"  # ITL estimate
    # an open-loop level is named by its rate and cap, not merged with a closed one
    assert table_rows(md, "2 req/s (max 4)")[-1][:3] == ["2 req/s (max 4)", "eagle", "200.0"]


def test_tokens_per_joule_beside_tok_s_and_a_throttled_level_marked():
    clean = dict(full_lv(1, 60.0), output_tokens_per_joule=12.3456, throttled=False, throttle_reasons=[])
    hot = dict(full_lv(8, 400.0), output_tokens_per_joule=9.5, throttled=True, throttle_reasons=["hw_thermal_slowdown"])
    md = rmd.render(rm.merge({"h": {"baseline": {"levels": [clean, hot]}, "candidate": None}},
                             baseline_label="base", candidate_label="eagle"))
    assert table_rows(md, "1")[-1][2:4] == ["60.0", "12.346"]
    assert table_rows(md, "8")[-1][2:4] == ["400.0", "9.500 THROTTLED"]
    assert rmd.TOK_J_NOTE in md


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


def test_a_hosts_section_names_its_servers_topology():
    shape = {"nodes": ["a", "b"], "nnodes": 2, "tp_size": 16, "pp_size": 2, "dp_size": 1, "ep_size": 1}
    text = rmd.render(rm.merge({"a": {"baseline": RESULTS["gpu01"]["baseline"], "topology": shape}}))
    line = "Topology: one server across a, b (nnodes 2, tp_size 16, pp_size 2, dp_size 1, ep_size 1), measured at rank 0."
    assert text.index("## a\n\n" + line) < text.index("### a: latency by level")
