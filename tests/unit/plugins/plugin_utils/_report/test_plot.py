# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/plot.py: the swap report's PNG, a real image and the same bytes for the same input; a series
per side and host, by concurrency or by request rate."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import level_plot
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge as rm
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import plot as rp
from tests.support.report_results import RESULTS, full_lv


def test_png_is_a_real_image():
    png = rp.render_png(rm.merge(RESULTS))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(png) > 20000
    assert png == rp.render_png(rm.merge(RESULTS))  # same input, same bytes


def test_a_series_per_side_and_host_per_gpu_only_with_a_gpu_count():
    report = rm.merge(RESULTS, baseline_label="base", candidate_label="eagle")
    drawn = rp.series(report)
    assert [(s["key"], s["label"], s["host"], s["gpus"]) for s in drawn] == [
        ("baseline", "base", "gpu01", None), ("baseline", "base", "gpu02", None),
        ("candidate", "eagle", "gpu01", None), ("candidate", "eagle", "gpu02", None)]
    report["gpus_per_server"] = 8
    assert {s["gpus"] for s in rp.series(report)} == {8}


def test_plot_series_by_concurrency_or_by_rate():
    closed = rm.merge({"h": {"baseline": {"levels": [full_lv(1, 60.0), full_lv(8, 400.0)]}}})
    drawn = rp.series(closed)
    assert not level_plot.by_rate(drawn)
    assert level_plot.level_points(drawn[0], "tpot_p99_ms") == [(1, 18.0, None, None), (8, 18.0, None, None)]
    opened = rm.merge({"h": {"baseline": {"levels": [full_lv(4, 60.0, rate=1.0), full_lv(4, 90.0, rate=2.0)]}}})
    assert level_plot.by_rate(rp.series(opened))
    assert [p[:2] for p in level_plot.level_points(rp.series(opened)[0], "output_tok_s", rate=True)] == [
        (1.0, 60.0), (2.0, 90.0)]
    fig = rp.build_figure(opened)
    assert fig.axes[1].get_xlabel() == "request rate (req/s)"
    assert rp.render_png(opened)[:8] == b"\x89PNG\r\n\x1a\n"
