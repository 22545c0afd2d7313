# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/compare_plot.py: a colour and line style per variant (the engine variants' own, the
speculative ones dashed, the experiment's others in turn), and the comparison's PNG, a real image,
the same bytes for the same report."""

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


def test_engine_variants_keep_their_style_and_speculative_ones_are_dashed():
    report = rc.compare(RECORDS, "T")
    styles = rcp.styles(report)
    assert styles[SG] == rcp.STYLE[SG] and styles[SG][1] == "-"
    assert styles[SG + "+eagle3"] == (styles[SG][0], "--")
    other = {"variants": ["base", "spec"], "hosts": {"h1": {"base": {}, "spec": {"speculative": {"algorithm": "EAGLE3"}}}}}
    assert rcp.styles(other) == {"base": (rcp.OTHER_HUES[0], "-"), "spec": (rcp.OTHER_HUES[1], "--")}


def test_the_png_is_a_real_image_and_the_same_for_the_same_report():
    report = rc.compare(RECORDS, "T")
    png = rcp.render_png(report)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000
    assert png == rcp.render_png(rc.compare(RECORDS, "T"))
