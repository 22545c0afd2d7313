# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rollout probe's plot: output tok/s through the router and the router's healthy workers over
time, on one time axis; the requests that did not complete marked where they ended, the span in
which the router's workers changed shaded. The data is rollout_probe.as_data()'s."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import axes_style, figure

LOSS_MARKERS = {"failed": "x", "broken": "v"}


def build(title: str, data: dict):
    """The Figure (matplotlib, Agg canvas, no pyplot)."""
    Figure, FigureCanvasAgg = figure.load()
    fig = Figure(figsize=(12, 5.5), dpi=100)
    FigureCanvasAgg(fig)
    top = fig.add_subplot(2, 1, 1)
    bottom = fig.add_subplot(2, 1, 2, sharex=top)
    tok, workers = axes_style.PALETTE[0], axes_style.PALETTE[2]
    if data["throughput"]:
        xs, ys = zip(*data["throughput"])
        top.step(xs, ys, where="post", color=tok, label="output tok/s of the completed requests (2 s bins)")
    for name, marker in LOSS_MARKERS.items():
        lost = [t for t, outcome in data["losses"] if outcome == name]
        if lost:
            top.plot(lost, [0] * len(lost), linestyle="None", marker=marker, color=axes_style.PALETTE[3],
                     label="%s requests (%d)" % (name, len(lost)))
    top.set_ylabel("output tok/s")
    top.set_ylim(bottom=0)
    if data["healthy"]:
        xs, ys = zip(*data["healthy"])
        bottom.step(xs, ys, where="post", color=workers, label="healthy workers in the router")
        bottom.set_ylim(-0.2, max(ys) + 0.5)
        bottom.yaxis.get_major_locator().set_params(integer=True)
    bottom.set_ylabel("healthy workers")
    bottom.set_xlabel("seconds since the probe started")
    for ax in (top, bottom):
        if data.get("change_window_s"):
            ax.axvspan(*data["change_window_s"], color="#999999", alpha=0.15, label="workers changing")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower left", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig


def render_png(data: dict) -> bytes:
    """PNG bytes of the plot (MissingLibrary without matplotlib)."""
    with figure.names_as_text():
        return figure.png(build(data["title"], data))
