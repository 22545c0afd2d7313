# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/category_plot.py: the per-category panel drawn on a real matplotlib axes: one bar per
variant and category (the reference left out), labelled with the acceptance length; no panel
without a category table."""

from __future__ import annotations

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
    category_plot.draw(ax, {"h1": TABLE}, titles={"base": "baseline", "eagle": "candidate"})
    bars = list(ax.patches)
    assert sorted(round(b.get_height(), 2) for b in bars) == [1.2, 1.6]  # the reference has no bar
    assert [t.get_text() for t in ax.get_xticklabels()] == ["code", "math"]
    assert sorted(t.get_text() for t in ax.texts) == ["2.50", "3.20"]
    assert ax.get_title() == "By category at concurrency 8 (bar labels: accept length)"
    assert ax.get_ylabel() == "speed-up per token (x baseline)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["candidate"]
