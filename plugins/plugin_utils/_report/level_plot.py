# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The panels over the levels: output tok/s, TTFT and TPOT against concurrency (or request rate).

Markers only, at the levels measured, and x ticks only there: no line joins two levels, since
nothing was measured between them. Each series is dodged a little sideways (axes_style.dodge) so
equal figures of two variants or hosts both show. Latency: p50 filled, p99 hollow and larger
(a p99 equal to its p50 is a ring round the dot). With repeats,
the 95% intervals the results carry (output tok/s, TTFT p50) are drawn as vertical bars.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import axes_style

# The intervals a level carries with repeats, by the figure they belong to.
INTERVALS = {"output_tok_s": "output_tok_s", "ttft_p50_ms": "ttft_p50_ms"}


def by_rate(series):
    """Whether every level of every series is open-loop (x is then the request rate)."""
    rows = [r for s in series for r in (s.get("summary") or {}).get("levels", [])]
    return bool(rows) and all(r.get("request_rate") for r in rows)


def xlabel(rate):
    return "request rate (req/s)" if rate else "concurrency (requests in flight)"


def level_points(series, key, rate=False):
    """[(x, y, low, high)] of KEY over the levels of one series, by x."""
    out = []
    for r in (series.get("summary") or {}).get("levels", []):
        x = r.get("request_rate") if rate else (None if r.get("request_rate") else r["concurrency"])
        if x is None or r.get(key) is None:
            continue
        ci = (r.get("intervals") or {}).get(INTERVALS.get(key, "")) or {}
        out.append((x, r[key], ci.get("low"), ci.get("high")))
    return sorted(out)


def _draw(ax, series, key, colours, markers, rate, hollow=False):
    """One KEY of every series on AX; returns the (x, y, high) of each point drawn."""
    xs_all = []
    for s in series:
        pts = level_points(s, key, rate)
        if not pts:
            continue
        factor = axes_style.dodge(s["order"], len(series))
        xs = [p[0] * factor for p in pts]
        xs_all.extend((p[0], p[1], p[3]) for p in pts)
        colour = colours[s["key"]]
        # p99's hollow marker is the larger and lies under p50's: equal figures show a ring round a dot.
        ax.plot(xs, [p[1] for p in pts], linestyle="None", marker=markers[s["host"]], color=colour,
                markersize=10 if hollow else 6, markerfacecolor="white" if hollow else colour,
                markeredgewidth=1.5 if hollow else 1.0, zorder=2.5 if hollow else 3,
                gid="%s %s %s" % (key, s["key"], s["host"]))
        bars = [(x, p) for x, p in zip(xs, pts) if p[2] is not None and p[3] is not None]
        if bars:
            ax.errorbar([b[0] for b in bars], [b[1][1] for b in bars],
                        yerr=[[b[1][1] - b[1][2] for b in bars], [b[1][3] - b[1][1] for b in bars]],
                        fmt="none", ecolor=colour, capsize=3, zorder=2, gid="interval %s %s" % (key, s["key"]))
    return xs_all


def _axes(ax, drawn, rate, ylabel, title, log_y):
    """Scales, labels and limits; DRAWN: _draw's points. The x axis spans half a power of two
    beyond the outer levels (the dodged markers and a lone level keep their context); a log y
    axis only where the figures span a factor of 3 or more (less would show no tick label)."""
    xs = [p[0] for p in drawn]
    ys = [p[1] for p in drawn if p[1] and p[1] > 0]
    ax.set_xscale("log", base=2)
    if xs:
        ax.set_xlim(min(xs) / 2 ** 0.5, max(xs) * 2 ** 0.5)
    log_y = log_y and bool(ys) and max(ys) / min(ys) >= 3
    if log_y:
        ax.set_yscale("log")
    elif drawn:
        ax.set_ylim(0, max(max(p[1], p[2] or 0) for p in drawn) * 1.12 or 1.0)
    ax.set_xlabel(xlabel(rate))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if not xs:
        axes_style.nothing_measured(ax, "no %s measured" % ylabel.split(" (")[0])
    axes_style.plain_ticks(ax, log_y=log_y, x_ticks=xs or None)


def throughput(ax, series, colours, markers, rate):
    drawn = _draw(ax, series, "output_tok_s", colours, markers, rate)
    _axes(ax, drawn, rate, "output tok/s (per host)", "Output tok/s per host at each level", log_y=False)


def latency(ax, series, name, colours, markers, rate):
    """p50 (filled) and p99 (hollow) of NAME (ttft, tpot)."""
    drawn = _draw(ax, series, "%s_p50_ms" % name, colours, markers, rate)
    drawn += _draw(ax, series, "%s_p99_ms" % name, colours, markers, rate, hollow=True)
    _axes(ax, drawn, rate, "%s (ms)" % name.upper(), "%s p50 (filled) / p99 (hollow)" % name.upper(), log_y=True)
