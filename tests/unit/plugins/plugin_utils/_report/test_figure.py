# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/figure.py, read back through matplotlib's artists (not a golden image): the
throughput-interactivity panel first, a variant's colour the same in every panel, two variants
with equal figures both drawn, intervals with repeats, gate verdicts and hosts in a legend that
lies outside every panel, plain tick labels."""

from __future__ import annotations

import re

import pytest
from matplotlib.collections import LineCollection

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import axes_style, figure
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare as rc
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare_plot as rcp
from tests.support.plot_records import records

GATES = [{"host": "h1", "variant": "faster", "passed": True}, {"host": "h1", "variant": "same-b", "passed": False},
         {"host": "h2", "variant": "same-b", "passed": True}]


@pytest.fixture(scope="module")
def fig():
    report = rc.compare(records(registry.DEFAULT), "T", reference="same-a")
    report["gates"] = GATES
    out = rcp.build_figure(report)
    out.canvas.draw()  # lays out the legend and the tick labels
    return out


def _markers(ax):
    """{variant: [(colour, xs, ys, marker size)]} of the marker-only lines an axes draws."""
    out = {}
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if line.get_linestyle() == "None" and " " in gid and not gid.startswith("interval"):
            variant = gid.split(" ")[-2]
            out.setdefault(variant, []).append((line.get_color(), list(line.get_xdata()), list(line.get_ydata()),
                                                line.get_markersize()))
    return out


def test_the_first_panel_is_throughput_per_gpu_against_tok_s_per_user_with_its_frontier(fig):
    first = fig.axes[0]
    assert first.get_xlabel() == "tok/s per user (1000 / TPOT p50)"
    assert first.get_ylabel() == "output tok/s per GPU"
    drawn = _markers(first)
    # 'faster' on h1 at concurrency 16: 1.5 * 60 * 16**0.8 tok/s over 8 GPUs, at 1000 / (16 * 2) tok/s per user.
    colour, xs, ys, _size = drawn["faster"][0]
    assert (round(xs[0], 2), round(ys[0], 2)) == (round(1000 / 32.0, 2), round(1.5 * 60 * 16 ** 0.8 / 8, 2))
    frontier = [line for line in first.get_lines() if line.get_gid() == "frontier"]
    assert len(frontier) == 1 and len(frontier[0].get_xdata()) == 5  # 'faster' beats the others at every level


def test_one_colour_per_variant_in_every_panel_and_a_marker_per_host(fig):
    expected = dict(zip(["same-a", "same-b", "faster"], axes_style.PALETTE))
    for ax in fig.axes[:4]:
        drawn = _markers(ax)
        assert set(drawn) == set(expected), ax.get_title()
        for variant, lines in drawn.items():
            assert {c for c, _x, _y, _s in lines} == {expected[variant]}
    hosts = {line.get_marker() for line in fig.axes[0].get_lines() if (line.get_gid() or "").endswith(" h2")}
    assert hosts == {axes_style.MARKERS[1]}


def test_two_variants_with_equal_figures_are_both_visible(fig):
    first, by_level = _markers(fig.axes[0]), _markers(fig.axes[1])
    # Throughput-interactivity: the same points, the later variant's markers smaller (rings).
    assert first["same-a"][0][1:3] == first["same-b"][0][1:3]
    assert first["same-b"][0][3] < first["same-a"][0][3]
    # Over the levels: the same figures, drawn side by side.
    assert by_level["same-a"][0][2] == by_level["same-b"][0][2]
    assert all(a < b for a, b in zip(by_level["same-a"][0][1], by_level["same-b"][0][1]))


def test_intervals_are_drawn_with_repeats(fig):
    for ax in fig.axes[:3]:  # tok/s per GPU, tok/s, TTFT p50
        bars = [c for c in ax.collections if isinstance(c, LineCollection) and (c.get_gid() or "").startswith("interval")]
        assert len(bars) == 6, ax.get_title()  # 3 variants x 2 hosts
        low, high = bars[0].get_segments()[0][:, 1]
        assert high > low


def test_the_legend_is_outside_every_panel_and_shows_the_gate_verdicts(fig):
    legend = fig.legends[0]
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts[:3] == ["same-a", "same-b: gates FAIL (1 of 2)", "faster: gates pass (1)"]
    assert "host h1" in texts and "host h2" in texts and "Pareto frontier" in texts
    box = legend.get_window_extent()
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent()), ax.get_title()
        assert ax.get_legend() is None


def test_tick_labels_are_plain_numbers(fig):
    for ax in fig.axes[:4]:
        labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels(minor=True)
                  + ax.get_yticklabels() if t.get_text()]
        assert labels, ax.get_title()
        assert all(re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", t) for t in labels), (ax.get_title(), labels)
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == ["1", "2", "4", "8", "16"]


def test_gate_verdicts_per_variant():
    assert figure.verdicts(GATES) == {"faster": "gates pass (1)", "same-b": "gates FAIL (1 of 2)"}
    assert figure.verdicts(None) == {}
