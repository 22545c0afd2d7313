# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The whole plot of a report, the same layout for the swap, engine and experiment reports.

Row 1: throughput-interactivity (the first panel, tradeoff_plot.py), output tok/s per host
against concurrency. Row 2: TTFT and TPOT p50/p99 (level_plot.py). Row 3, with a per-category
table: the per-category bars (category_plot.py). One legend for the whole figure, to the right
of every panel (never over data): a colour per variant, with its gate verdict where gates ran,
a marker per host, the Pareto frontier.

A series is a dict: key (the variant's key, for its colour), label (the name shown), host,
summary (merge.side_summary), gpus (the server's GPU count, or None), index (the variant's
position) and order (the series' position, for the dodge).

Uses matplotlib's Figure and Agg canvas directly (no pyplot): no display, no global backend
switch, nothing left open in the controller process.
"""

from __future__ import annotations

import contextlib
import io

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import MissingLibrary
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import (
    axes_style,
    category_plot,
    level_plot,
    tradeoff_plot,
)

# The share of the figure's width the panels take; the legend sits right of it.
PANELS_WIDTH = 0.78


def load():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingLibrary("matplotlib is not installed on the controller (%s): no plot" % exc)
    return Figure, FigureCanvasAgg


def names_as_text():
    """A context in which matplotlib draws every text as written: it reads $...$ as math otherwise,
    so a variant, host or category name holding '$x^2$' would render as a formula and one holding
    '$\\nope$' would fail the plot."""
    try:
        import matplotlib
    except ImportError:
        return contextlib.nullcontext()  # load() says what is missing
    return matplotlib.rc_context({"text.parse_math": False})


def verdicts(rows):
    """{variant: "gates pass (N)" | "gates FAIL (F of N)"} of an experiment's gate rows."""
    out = {}
    for name in dict.fromkeys(r["variant"] for r in rows or []):
        mine = [r for r in rows if r["variant"] == name]
        failed = [r for r in mine if not r["passed"]]
        out[name] = "gates FAIL (%d of %d)" % (len(failed), len(mine)) if failed else "gates pass (%d)" % len(mine)
    return out


def _legend(fig, variants, colours, markers, hosts, gates, frontier, hatches):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = []
    for key, label in variants:
        text = "%s: %s" % (label, gates[key]) if key in gates else label
        handles.append(Line2D([], [], linestyle="None", marker="o", markersize=8, color=colours[key], label=text))
    if len(hosts) > 1:
        handles += [Line2D([], [], linestyle="None", marker=markers[h], markersize=8, color="#555555",
                           label="host %s" % h) for h in hosts]
    if frontier:
        handles.append(Line2D([], [], linestyle="--", color="black", label=tradeoff_plot.FRONTIER))
    handles += [Patch(facecolor="white", edgecolor="#555555", hatch=hatch, label="bars: %s" % host)
                for host, hatch in hatches.items()]
    return fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(PANELS_WIDTH + 0.01, 0.95),
                      fontsize=8, title="colour: variant, marker: host", title_fontsize=8, frameon=False)


def build(title, series, variants, hosts, gates=None, tables=None, titles=None):
    """The Figure. VARIANTS: [(key, label)] in order; HOSTS: the hosts in order; GATES: verdicts();
    TABLES: {host: per-category table or None}; TITLES: the category tables' variant key -> label."""
    Figure, FigureCanvasAgg = load()
    tables = tables or {}
    rows = 3 if category_plot.has_categories(tables) else 2
    fig = Figure(figsize=(16, 4.5 * rows), dpi=100)
    FigureCanvasAgg(fig)
    colours = axes_style.colours([k for k, _label in variants])
    markers = axes_style.markers(hosts)
    rate = level_plot.by_rate(series)
    first = fig.add_subplot(rows, 2, 1)
    tradeoff_plot.draw(first, series, colours, markers)
    level_plot.throughput(fig.add_subplot(rows, 2, 2), series, colours, markers, rate)
    level_plot.latency(fig.add_subplot(rows, 2, 3), series, "ttft", colours, markers, rate)
    level_plot.latency(fig.add_subplot(rows, 2, 4), series, "tpot", colours, markers, rate)
    hatches = {}
    if rows == 3:
        hatches = category_plot.draw(fig.add_subplot(3, 1, 3), tables, titles, colours)
    frontier = any(line.get_gid() == "frontier" for line in first.get_lines())
    _legend(fig, variants, colours, markers, hosts, gates or {}, frontier, hatches)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, PANELS_WIDTH, 0.97))
    return fig


def png(fig):
    """PNG bytes of FIG; no timestamp in the metadata: the same report gives the same bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
