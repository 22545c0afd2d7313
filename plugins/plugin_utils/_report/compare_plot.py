# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine comparison's plot (compare.py's report) as PNG bytes: one colour per variant.

Top left: fleet output tok/s against concurrency (sum over hosts); top right: per host.
Bottom: TTFT and TPOT p50 per host and variant. Axes, series and the Agg canvas as in plot.py.
"""

from __future__ import annotations

import io

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import category_plot
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.plot import (
    _int_formatter,
    _load,
    _series,
    _xlabel,
    names_as_text,
)

# Base engines solid, EAGLE-3 variants dashed; one hue per engine, in registry order.
HUES = ("#4c72b0", "#dd8452", "#8172b3", "#937860", "#da8bc3")
STYLE = {}
for _hue, _name in zip(HUES, _registry.names()):
    STYLE[_name] = (_hue, "-")
    STYLE[_name + "+eagle3"] = (_hue, "--")


# Variants of other names (an experiment's): a colour each, in the order of the variants; speculative dashed.
OTHER_HUES = ("#55a868", "#c44e52", "#64b5cd", "#ccb974", "#8c8c8c", "#2f4b7c", "#a05195", "#ff7c43")


def styles(report):
    """{variant: (colour, line style)}: STYLE for the engine variants, OTHER_HUES in turn for the rest."""
    out, others = {}, 0
    for name in report["variants"]:
        if name in STYLE:
            out[name] = STYLE[name]
            continue
        rec = next((by_name[name] for by_name in report["hosts"].values() if name in by_name), {})
        out[name] = (OTHER_HUES[others % len(OTHER_HUES)], "--" if rec.get("speculative") else "-")
        others += 1
    return out


def _axes(ax, series, ylabel, title, style, log_y=False):
    """SERIES: [(label, variant, side summary)]; STYLE: styles(report)."""
    for label, name, summary in series:
        color, dash = style[name]
        xs, ys = _series(summary, ylabel[1])
        if xs:
            ax.plot(xs, ys, marker="o", color=color, linestyle=dash, label=label, linewidth=1.5)
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(_xlabel(False))
    ax.set_ylabel(ylabel[0])
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.xaxis.set_major_formatter(_int_formatter())
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)


def render_png(report):
    """PNG bytes of the comparison (MissingLibrary without matplotlib)."""
    with names_as_text():
        return _render_png(report)


def _render_png(report):
    Figure, FigureCanvasAgg = _load()
    hosts = sorted(report["hosts"])
    names = report["variants"]
    per_host = [("%s %s" % (h, n) if len(hosts) > 1 else n, n, report["hosts"][h][n]["summary"])
                for h in hosts for n in names
                if n in report["hosts"][h] and report["hosts"][h][n]["summary"]]
    fleet = [(n, n, report["fleet"][n]["summary"]) for n in names if report["fleet"][n]["summary"]]
    tables = report.get("categories") or {}
    rows = 3 if category_plot.has_categories(tables) else 2
    fig = Figure(figsize=(13, 4.5 * rows), dpi=100)
    FigureCanvasAgg(fig)
    if rows == 3:
        category_plot.draw(fig.add_subplot(3, 1, 3), tables)
    style = styles(report)
    _axes(fig.add_subplot(rows, 2, 1), fleet, ("output tok/s", "output_tok_s"),
          "Fleet (%d hosts, sum)" % len(hosts), style)
    _axes(fig.add_subplot(rows, 2, 2), per_host, ("output tok/s", "output_tok_s"), "Per host", style)
    _axes(fig.add_subplot(rows, 2, 3), per_host, ("TTFT p50 (ms)", "ttft_p50_ms"), "TTFT p50", style, log_y=True)
    _axes(fig.add_subplot(rows, 2, 4), per_host, ("TPOT p50 (ms)", "tpot_p50_ms"), "TPOT p50", style, log_y=True)
    fig.suptitle(report["title"])
    fig.tight_layout()
    buf = io.BytesIO()
    # No timestamp in the metadata: the same report gives the same bytes (idempotent task).
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
