# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How every panel of a report's plot tells its series apart and labels its axes.

One colour per variant (Okabe-Ito, safe for the common colour-vision deficiencies), the same in
every panel; one marker shape per host; tick labels as plain numbers ("20", "60"), never
matplotlib's "2x10^1" of a log axis. Two variants with equal figures stay both visible: on a
concurrency axis each series is shifted a little sideways (dodge), on the throughput-interactivity
panel, whose x is a measured figure and is not shifted, each later variant's marker is drawn
smaller on top of the earlier ones (equal points show as concentric rings), each over a
translucent fill (two hosts' different markers at one point both show).
"""

from __future__ import annotations

# Okabe & Ito (2008), "Color Universal Design", without its yellow (too faint on white).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
# How far apart (in log2 units of the concurrency axis) neighbouring series are drawn, at most,
# and the widest spread of all series of a level together.
DODGE_STEP = 0.12
DODGE_SPREAD = 0.5


def colours(keys):
    """{variant key: colour}, in the order given (the reference first)."""
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}


def markers(hosts):
    """{host: marker shape}, in the order given."""
    return {h: MARKERS[i % len(MARKERS)] for i, h in enumerate(hosts)}


def marker_size(index):
    """Marker size of the INDEXth variant: later ones smaller, so equal points stay visible."""
    return max(4.0, 11.0 - 3.0 * index)


def translucent(colour, alpha=0.5):
    """COLOUR as an RGBA fill that lets what lies under it show."""
    from matplotlib.colors import to_rgba
    return to_rgba(colour, alpha)


def dodge(index, count):
    """The factor by which the x of series INDEX of COUNT is multiplied on a log2 axis."""
    step = min(DODGE_STEP, DODGE_SPREAD / max(count, 1))
    return 2.0 ** ((index - (count - 1) / 2.0) * step)


def plain(value):
    """A tick value as written by hand: 20, 0.5, 1500."""
    return "%g" % value


def plain_ticks(ax, log_y=False, x_ticks=None):
    """Plain tick labels on AX; X_TICKS: the only x ticks (the measured levels)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator, ScalarFormatter

    if x_ticks is not None:
        ax.xaxis.set_major_locator(FixedLocator(sorted(set(x_ticks))))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: plain(v)))
        ax.xaxis.set_minor_locator(NullLocator())
    elif ax.get_xscale() == "log":
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: plain(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_formatter(_scalar(ScalarFormatter))
    if log_y:
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: plain(v)))
        # Minor ticks labelled where the axis spans few decades (with more, the major ticks say
        # enough and minor labels would collide): at 2 and 5 of each decade under two decades,
        # at 2, 3, 5 and 7 under one.
        low, high = ax.get_ylim()
        span = high / low if low > 0 else float("inf")
        shown = (2, 3, 5, 7) if span < 10 else (2, 5) if span < 100 else ()
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: plain(v) if _leading(v) in shown else "")
                                     if shown else NullFormatter())
    else:
        ax.yaxis.set_major_formatter(_scalar(ScalarFormatter))


def _scalar(ScalarFormatter):
    """matplotlib's linear-axis formatter without an offset ("+1e3") or a power of ten."""
    fmt = ScalarFormatter(useOffset=False)
    fmt.set_scientific(False)
    return fmt


def nothing_measured(ax, why):
    """Say on an empty panel why it is empty (rather than leave bare axes)."""
    ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center", color="#555555")


def _leading(value):
    return int(("%e" % value)[0])
