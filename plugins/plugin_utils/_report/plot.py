# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Throughput, TTFT and TPOT against concurrency (or request rate), baseline against candidate, as PNG bytes.

x is the concurrency of closed-loop levels; when every level is open-loop, the
request rate instead (log scale either way).

Uses matplotlib's Figure and Agg canvas directly (no pyplot): no display, no
global backend switch, nothing left open in the controller process.
"""

from __future__ import annotations

import contextlib
import io

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import MissingLibrary
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import category_plot

COLORS = {"baseline": "#4c72b0", "candidate": "#dd8452"}


def _load():
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
        return contextlib.nullcontext()  # _load says what is missing
    return matplotlib.rc_context({"text.parse_math": False})


def _by_rate(report):
    rows = [r for e in report["hosts"].values() for side in ("baseline", "candidate")
            for r in (e.get(side) or {}).get("levels", [])]
    return bool(rows) and all(r.get("request_rate") for r in rows)


def _series(side, key="output_tok_s", by_rate=False):
    pts = []
    for r in (side or {}).get("levels", []):
        x = r.get("request_rate") if by_rate else (None if r.get("request_rate") else r["concurrency"])
        if x is not None and r.get(key) is not None:
            pts.append((x, r[key]))
    pts.sort()
    return [p[0] for p in pts], [p[1] for p in pts]


def _xlabel(by_rate):
    return "request rate (req/s)" if by_rate else "concurrency (requests in flight)"


def _latency_axes(ax, report, name, by_rate):
    """p50 (solid) and p99 (dashed) of one latency figure, every host, both sides."""
    labels = report["labels"]
    for side in ("baseline", "candidate"):
        for host in sorted(report["hosts"]):
            for q, style in (("p50", "-"), ("p99", "--")):
                xs, ys = _series(report["hosts"][host].get(side), "%s_%s_ms" % (name, q), by_rate)
                if xs:
                    label = "%s %s" % (labels[side], q) if len(report["hosts"]) == 1 else \
                        "%s %s %s" % (host, labels[side], q)
                    ax.plot(xs, ys, marker="o", color=COLORS[side], linestyle=style, label=label,
                            linewidth=1.5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(_xlabel(by_rate))
    ax.set_ylabel("%s (ms)" % name.upper())
    ax.set_title("%s p50 / p99" % name.upper())
    ax.grid(True, which="both", alpha=0.3)
    ax.xaxis.set_major_formatter(_int_formatter())
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)


def _axes(ax, entries, labels, title, per_host=False, by_rate=False):
    for side in ("baseline", "candidate"):
        for name, entry in entries:
            xs, ys = _series(entry.get(side), by_rate=by_rate)
            if not xs:
                continue
            label = labels[side] if not per_host else "%s %s" % (name, labels[side])
            ax.plot(xs, ys, marker="o", color=COLORS[side], label=label,
                    linewidth=1.0 if per_host else 2.0, alpha=0.6 if per_host else 1.0,
                    linestyle="-" if side == "candidate" or not per_host else "--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(_xlabel(by_rate))
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
    """PNG bytes. Top: tok/s (fleet totals, plus a per-host panel when there is more than
    one host). Bottom: TTFT and TPOT p50/p99 per host."""
    with names_as_text():
        return _render_png(report)


def _render_png(report):
    Figure, FigureCanvasAgg = _load()
    labels = report["labels"]
    hosts = sorted(report["hosts"])
    by_rate = _by_rate(report)
    tables = {h: report["hosts"][h].get("categories") for h in hosts}
    rows = 3 if category_plot.has_categories(tables) else 2
    fig = Figure(figsize=(13, 4.5 * rows), dpi=100)
    FigureCanvasAgg(fig)
    if rows == 3:
        category_plot.draw(fig.add_subplot(3, 1, 3), tables, labels)
    if len(hosts) > 1:
        _axes(fig.add_subplot(rows, 2, 1), [("fleet", report["fleet"])], labels,
              "Fleet (%d hosts, sum)" % len(hosts), by_rate=by_rate)
        _axes(fig.add_subplot(rows, 2, 2), [(h, report["hosts"][h]) for h in hosts], labels,
              "Per host", per_host=True, by_rate=by_rate)
    else:
        _axes(fig.add_subplot(rows, 1, 1), [(hosts[0], report["hosts"][hosts[0]])], labels, hosts[0],
              by_rate=by_rate)
    _latency_axes(fig.add_subplot(rows, 2, 3), report, "ttft", by_rate)
    _latency_axes(fig.add_subplot(rows, 2, 4), report, "tpot", by_rate)
    fig.suptitle(report["title"])
    fig.tight_layout()
    buf = io.BytesIO()
    # No timestamp in the metadata: the same report gives the same bytes (idempotent task).
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
