# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/category_plot.py: the per-category panel drawn on a real matplotlib axes: one bar per
variant and category (the reference left out), labelled with the acceptance length; no panel
without a category table; the variant's colour on its bars, a hatch per host."""

from __future__ import annotations

from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import category_plot

TABLE = {"reference": "base", "concurrency": 8,
         "variants": {"base": {"math": {"speedup": 1.0}, "code": {"speedup": 1.0}},
                      "eagle": {"math": {"speedup": 1.6, "accept_length": 3.2},
                                "code": {"speedup": 1.2, "accept_length": 2.5}}}}


def test_a_panel_only_with_a_category_table():
    assert category_plot.has_categories({"h1": TABLE})
    assert not category_plot.has_categories({"h1": None, "h2": {"variants": {}}})


def test_bars_per_category_labelled_with_the_accept_length():
    ax = Figure().add_subplot()
    hatches = category_plot.draw(ax, {"h1": TABLE}, titles={"base": "baseline", "eagle": "candidate"},
                                 colours={"eagle": "#E69F00"})
    bars = list(ax.patches)
    assert sorted(round(b.get_height(), 2) for b in bars) == [1.2, 1.6]  # the reference has no bar
    assert [t.get_text() for t in ax.get_xticklabels()] == ["code", "math"]
    assert sorted(t.get_text() for t in ax.texts) == ["2.50", "3.20"]
    assert ax.get_title() == "By category at concurrency 8 (bar labels: accept length)"
    assert ax.get_ylabel() == "speed-up per token (x baseline)"
    assert {to_hex(b.get_facecolor()) for b in bars} == {"#e69f00"}  # the variant's colour in every panel
    assert hatches == {} and ax.get_legend() is None  # the figure's legend names the variants


def test_a_hatch_per_host_with_several_hosts():
    ax = Figure().add_subplot()
    hatches = category_plot.draw(ax, {"h1": TABLE, "h2": TABLE})
    assert hatches == {"h1": "", "h2": "//"}
    assert sorted(b.get_hatch() or "" for b in ax.patches) == ["", "", "//", "//"]
