# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/level_plot.py: markers only at the measured levels (no joining line), x ticks only
there, p99 hollow, the repeats' interval as a bar."""

from __future__ import annotations

from matplotlib.figure import Figure

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import level_plot

ROWS = [{"concurrency": 1, "output_tok_s": 80.0, "ttft_p50_ms": 30.0, "ttft_p99_ms": 60.0,
         "intervals": {"ttft_p50_ms": {"n": 3, "mean": 30.0, "low": 25.0, "high": 35.0}}},
        {"concurrency": 16, "output_tok_s": 900.0, "ttft_p50_ms": 90.0, "ttft_p99_ms": 200.0, "intervals": None}]
SERIES = [{"key": "v", "host": "h", "summary": {"levels": ROWS}, "gpus": 8, "index": 0, "order": 0}]


def test_latency_markers_only_at_the_measured_levels():
    ax = Figure().add_subplot()
    level_plot.latency(ax, SERIES, "ttft", {"v": "#0072B2"}, {"h": "o"}, rate=False)
    lines = [line for line in ax.get_lines() if not (line.get_gid() or "").startswith("interval")]
    assert {line.get_linestyle() for line in lines} == {"None"}
    assert [list(line.get_ydata()) for line in lines] == [[30.0, 90.0], [60.0, 200.0]]
    assert lines[0].get_markerfacecolor() != "white" and lines[1].get_markerfacecolor() == "white"
    assert list(ax.get_xticks()) == [1, 16]
    assert len([c for c in ax.collections if (c.get_gid() or "").startswith("interval")]) == 1


def test_an_empty_panel_says_so():
    ax = Figure().add_subplot()
    level_plot.latency(ax, [], "tpot", {}, {}, rate=False)
    assert [t.get_text() for t in ax.texts] == ["no TPOT measured"]
