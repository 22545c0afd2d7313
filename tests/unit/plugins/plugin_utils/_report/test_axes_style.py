# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/axes_style.py: a colour per variant from the colour-blind-safe palette, a marker per
host, later variants smaller, series dodged around the level, plain tick labels on a log axis."""

from __future__ import annotations

from matplotlib.figure import Figure

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import axes_style


def test_colours_markers_sizes_and_dodge():
    assert axes_style.colours(["a", "b"]) == {"a": "#0072B2", "b": "#E69F00"}
    assert len(set(axes_style.colours(list("abcdefg")).values())) == 7
    assert axes_style.markers(["h1", "h2"]) == {"h1": "o", "h2": "s"}
    assert axes_style.translucent("#0072B2") == (0.0, 0x72 / 255, 0xB2 / 255, 0.5)
    assert axes_style.marker_size(0) > axes_style.marker_size(1) > axes_style.marker_size(2) >= 4.0
    factors = [axes_style.dodge(i, 3) for i in range(3)]
    assert factors[0] < factors[1] == 1.0 < factors[2] and factors[2] < 2 ** axes_style.DODGE_SPREAD


def test_a_log_axis_is_labelled_with_plain_numbers():
    ax = Figure().add_subplot()
    ax.plot([1, 2, 4, 16], [15.0, 20.0, 35.0, 60.0], linestyle="None", marker="o")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    axes_style.plain_ticks(ax, log_y=True, x_ticks=[1, 2, 4, 16])
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()]
    assert "20" in labels and "50" in labels and not any("10^" in t or "times" in t or "$" in t for t in labels)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "16"]
