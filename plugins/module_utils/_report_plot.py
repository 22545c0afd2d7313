# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Throughput against concurrency, baseline against candidate, as PNG bytes.

Uses matplotlib's Figure and Agg canvas directly (no pyplot): no display, no
global backend switch, nothing left open in the controller process.
"""

from __future__ import annotations

import io

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import MissingLibrary

COLORS = {"baseline": "#4c72b0", "candidate": "#dd8452"}


def _load():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingLibrary("matplotlib is not installed on the controller (%s): no plot" % exc)
    return Figure, FigureCanvasAgg


def _series(side):
    pts = [(r["concurrency"], r["output_tok_s"]) for r in (side or {}).get("levels", [])
           if r["output_tok_s"] is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def _axes(ax, entries, labels, title, per_host=False):
    for side in ("baseline", "candidate"):
        for name, entry in entries:
            xs, ys = _series(entry.get(side))
            if not xs:
                continue
            label = labels[side] if not per_host else "%s %s" % (name, labels[side])
            ax.plot(xs, ys, marker="o", color=COLORS[side], label=label,
                    linewidth=1.0 if per_host else 2.0, alpha=0.6 if per_host else 1.0,
                    linestyle="-" if side == "candidate" or not per_host else "--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel("output tok/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.xaxis.set_major_formatter(_int_formatter())
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7 if per_host else 9)


def _int_formatter():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _pos: "%d" % v if v >= 1 else "%g" % v)


def render_png(report):
    """PNG bytes: fleet totals, plus a per-host panel when there is more than one host."""
    Figure, FigureCanvasAgg = _load()
    labels = report["labels"]
    hosts = sorted(report["hosts"])
    panels = 2 if len(hosts) > 1 else 1
    fig = Figure(figsize=(6.5 * panels, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    if panels == 2:
        _axes(fig.add_subplot(1, 2, 1), [("fleet", report["fleet"])], labels,
              "Fleet (%d hosts, sum)" % len(hosts))
        _axes(fig.add_subplot(1, 2, 2), [(h, report["hosts"][h]) for h in hosts], labels,
              "Per host", per_host=True)
    else:
        _axes(fig.add_subplot(1, 1, 1), [(hosts[0], report["hosts"][hosts[0]])], labels, hosts[0])
    fig.suptitle(report["title"])
    fig.tight_layout()
    buf = io.BytesIO()
    # No timestamp in the metadata: the same report gives the same bytes (idempotent task).
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
