# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The throughput-interactivity panel: the field's picture of a serving configuration.

y: output tok/s per GPU (the level's output tok/s divided by the GPUs of the server that served
it); x: tok/s per user, 1000 / TPOT p50 (ms), the pace one stream sees. One point per measured
level (concurrency or request rate), a colour per variant, a marker per host; the Pareto frontier
over every point drawn (dashed black): the levels no other level beats on both axes. Without a
GPU count for every series, y is tok/s per server and the axis says so. Markers are outlined in
the variant's colour over a translucent fill, so two hosts' markers at one point both show. With repeats the 95%
interval of tok/s is drawn as a vertical bar.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import axes_style

XLABEL = "tok/s per user (1000 / TPOT p50)"
YLABEL = "output tok/s per GPU"
YLABEL_NO_GPUS = "output tok/s per server (GPU count not recorded)"
FRONTIER = "Pareto frontier"


def points(series, per_gpu=True):
    """[(x, y, low, high)] of one series (SERIES: figure.py's dict); low/high None without repeats."""
    gpus = series.get("gpus") if per_gpu else None
    div = float(gpus) if gpus else 1.0
    out = []
    for row in (series.get("summary") or {}).get("levels", []):
        tpot, tps = row.get("tpot_p50_ms"), row.get("output_tok_s")
        if not tpot or tps is None:
            continue
        ci = (row.get("intervals") or {}).get("output_tok_s") or {}
        low, high = ci.get("low"), ci.get("high")
        out.append((1000.0 / tpot, tps / div, None if low is None else low / div, None if high is None else high / div))
    return sorted(out)


def frontier(xy):
    """The Pareto-optimal points of XY ([(x, y)], larger is better on both), by x."""
    best, out = None, []
    for x, y in sorted(set(xy), key=lambda p: (-p[0], -p[1])):
        if best is None or y > best:
            out.append((x, y))
            best = y
    return sorted(out)


def draw(ax, series, colours, markers):
    """The panel on AX for SERIES (figure.py's dicts, each with its variant index)."""
    per_gpu = all(s.get("gpus") for s in series)
    every = []
    for s in series:
        pts = points(s, per_gpu)
        if not pts:
            continue
        every.extend((x, y) for x, y, _lo, _hi in pts)
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        ax.plot(xs, ys, linestyle="None", marker=markers[s["host"]], color=colours[s["key"]],
                markersize=axes_style.marker_size(s["index"]), zorder=3 + s["index"],
                markerfacecolor=axes_style.translucent(colours[s["key"]]), markeredgewidth=1.5,
                gid="tradeoff %s %s" % (s["key"], s["host"]))
        bars = [(x, y, lo, hi) for x, y, lo, hi in pts if lo is not None and hi is not None]
        if bars:
            ax.errorbar([b[0] for b in bars], [b[1] for b in bars],
                        yerr=[[b[1] - b[2] for b in bars], [b[3] - b[1] for b in bars]],
                        fmt="none", ecolor=colours[s["key"]], capsize=3, zorder=2, gid="interval %s" % s["key"])
    edge = frontier(every)
    if len(edge) > 1:
        ax.plot([p[0] for p in edge], [p[1] for p in edge], linestyle="--", color="black", linewidth=1.0,
                zorder=1, label=FRONTIER, gid="frontier")
    ax.set_xlabel(XLABEL)
    ax.set_ylabel(YLABEL if per_gpu else YLABEL_NO_GPUS)
    ax.set_title("Throughput vs interactivity (a point per level; up and right is better)")
    ax.grid(True, alpha=0.3)
    if every:
        # From 0, with room above the highest point (the autoscaled edge would cut its marker).
        ax.set_xlim(0, max(x for x, _y in every) * 1.1)
        highs = [hi for s in series for *_p, hi in points(s, per_gpu) if hi is not None]
        ax.set_ylim(0, max([y for _x, y in every] + highs) * 1.12 or 1.0)
    else:
        axes_style.nothing_measured(ax, "no level with both tok/s and TPOT")
    axes_style.plain_ticks(ax)
