# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-category panel of both reports' plots: the TPOT speed-up of each variant against
the reference, one group of bars per category, for each host's `categories` table
(workload.categories); each bar is labelled with the variant's acceptance length there. A bar
has its variant's colour (the plot's other panels' colour) and, with several hosts, a hatch per
host; the figure's legend names both."""

from __future__ import annotations


def has_categories(tables):
    return any(t and any(t["variants"].values()) for t in tables.values())


HATCHES = ("", "//", "..", "xx", "\\\\", "oo")


def draw(ax, tables, titles=None, colours=None):
    """Bars on AX for TABLES ({host: workload.categories result or None}); TITLES maps a
    variant's key to the name shown (the swap report's baseline/candidate to its labels);
    COLOURS a variant's key to its colour. Returns {host: hatch} with several hosts, else {}."""
    titles, colours = titles or {}, colours or {}
    drawn_hosts = sorted(h for h in tables if tables[h])
    hatches = {h: HATCHES[i % len(HATCHES)] for i, h in enumerate(drawn_hosts)} if len(drawn_hosts) > 1 else {}
    bars = []  # (label, key, host, {category: (speedup, accept)})
    for host in sorted(tables):
        table = tables[host]
        if not table:
            continue
        for name, by_cat in table["variants"].items():
            if name == table["reference"]:
                continue
            shown = titles.get(name, name)
            label = "%s %s" % (host, shown) if len(tables) > 1 else shown
            bars.append((label, name, host,
                         {c: (f.get("speedup"), f.get("accept_length")) for c, f in by_cat.items()}))
    cats = sorted({c for _label, _key, _host, by_cat in bars for c in by_cat})
    width = 0.8 / max(len(bars), 1)
    for i, (label, key, host, by_cat) in enumerate(bars):
        xs = [j + i * width for j, c in enumerate(cats) if (by_cat.get(c) or (None,))[0] is not None]
        ys = [by_cat[c][0] for c in cats if (by_cat.get(c) or (None,))[0] is not None]
        drawn = ax.bar(xs, ys, width=width, label=label, color=colours.get(key), hatch=hatches.get(host),
                       edgecolor="white" if host not in hatches else "#333333", linewidth=0.5)
        accepts = [by_cat[c][1] for c in cats if (by_cat.get(c) or (None,))[0] is not None]
        ax.bar_label(drawn, labels=["" if a is None else "%.2f" % a for a in accepts], fontsize=6)
    ax.axhline(1.0, color="#888888", linewidth=0.8)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cats))])
    ax.set_xticklabels(cats, rotation=20, fontsize=7)
    conc = next(t["concurrency"] for t in tables.values() if t)
    ref = next(t["reference"] for t in tables.values() if t)
    ax.set_ylabel("speed-up per token (x %s)" % titles.get(ref, ref))
    ax.set_title("By category at concurrency %d (bar labels: accept length)" % conc)
    ax.grid(True, axis="y", alpha=0.3)
    return hatches
