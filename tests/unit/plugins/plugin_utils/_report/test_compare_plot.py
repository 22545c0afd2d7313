# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/compare_plot.py: a series per variant and host with its server's GPU count, and the
comparison's PNG, a real image, the same bytes for the same report (the panels: test_figure.py)."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare as rc
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare_plot as rcp

SG, VL = registry.names()[0], registry.names()[1]


def lv(c, tps):
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": 100.0, "p99": 200.0},
            "tpot_ms": {"p50": 15.0, "p99": 30.0}, "itl_ms": {"p50": 15.0, "p99": 30.0},
            "accept_length": None, "completed": 8, "failed": 0}


def rec(variant, *levels, **more):
    return dict({"variant": variant, "outcome": "ok", "bench": {"changed": False, "levels": list(levels)}}, **more)


RECORDS = {"h1": [rec(SG, lv(1, 60.0), lv(64, 2000.0)), rec(VL, lv(1, 80.0), lv(64, 1500.0)),
                  rec(SG + "+eagle3", lv(1, 90.0), lv(64, 1900.0))]}


def test_a_series_per_variant_and_host_with_the_gpus_its_teardown_released():
    records = {"h1": [rec(SG, lv(1, 60.0), teardown={"gpus_selected": 4, "kept": False}),
                      rec(VL, lv(1, 80.0), teardown={"gpus_selected": 8, "kept": True}), rec(SG + "+eagle3", lv(1, 90.0))]}
    drawn = rcp.series(rc.compare(records, "T"))
    assert [(s["key"], s["host"], s["gpus"], s["index"]) for s in drawn] == [
        (SG, "h1", 4, 0), (VL, "h1", None, 1), (SG + "+eagle3", "h1", None, 2)]  # a kept server released nothing


def test_the_png_is_a_real_image_and_the_same_for_the_same_report():
    report = rc.compare(RECORDS, "T")
    png = rcp.render_png(report)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000
    assert png == rcp.render_png(rc.compare(RECORDS, "T"))
