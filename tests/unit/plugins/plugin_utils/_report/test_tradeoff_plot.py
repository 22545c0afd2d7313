# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/tradeoff_plot.py: a point per level at (1000 / TPOT p50, tok/s per GPU) with its
interval, the Pareto frontier, and tok/s per server when a GPU count is missing."""

from __future__ import annotations

from matplotlib.figure import Figure

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import tradeoff_plot

ROWS = [{"concurrency": 1, "output_tok_s": 80.0, "tpot_p50_ms": 12.5, "intervals": None},
        {"concurrency": 8, "output_tok_s": 400.0, "tpot_p50_ms": 20.0,
         "intervals": {"output_tok_s": {"n": 3, "mean": 400.0, "low": 380.0, "high": 420.0}}},
        {"concurrency": 16, "output_tok_s": None, "tpot_p50_ms": 25.0}]


def _series(gpus):
    return {"key": "v", "host": "h", "summary": {"levels": ROWS}, "gpus": gpus, "index": 0, "order": 0}


def test_points_per_gpu_with_the_interval():
    assert tradeoff_plot.points(_series(8)) == [(50.0, 50.0, 47.5, 52.5), (80.0, 10.0, None, None)]
    assert tradeoff_plot.points(_series(None))[0] == (50.0, 400.0, 380.0, 420.0)


def test_the_frontier_keeps_the_points_nothing_beats_on_both_axes():
    assert tradeoff_plot.frontier([(10, 100), (20, 50), (15, 40), (30, 10), (20, 30)]) == [(10, 100), (20, 50), (30, 10)]


def test_without_a_gpu_count_the_axis_says_per_server():
    ax = Figure().add_subplot()
    tradeoff_plot.draw(ax, [_series(8), dict(_series(None), host="h2")], {"v": "#000000"}, {"h": "o", "h2": "s"})
    assert ax.get_ylabel() == tradeoff_plot.YLABEL_NO_GPUS and ax.get_xlabel() == tradeoff_plot.XLABEL
    empty = Figure().add_subplot()
    tradeoff_plot.draw(empty, [], {}, {})
    assert [t.get_text() for t in empty.texts] == ["no level with both tok/s and TPOT"]
