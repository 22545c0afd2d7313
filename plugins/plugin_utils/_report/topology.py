# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How a report names a server's shape (docs/multinode.md): its nodes, nnodes and TP/PP/DP/EP sizes, from the
`topology` a benchmark record keeps (_server/group.py topology)."""

from __future__ import annotations

SIZES = ("tp_size", "pp_size", "dp_size", "ep_size")


def sizes_text(topology: dict) -> str:
    """"nnodes 2, tp_size 16, pp_size 1, dp_size 1, ep_size 1": the sizes TOPOLOGY holds (a record written before it
    held PP/DP/EP names only those it has)."""
    return ", ".join("%s %s" % (key, topology[key]) for key in ("nnodes",) + SIZES if topology.get(key) is not None)


def spans_hosts(topology: dict | None) -> bool:
    return bool(topology) and int(topology.get("nnodes") or len(topology.get("nodes") or [])) > 1


def line(topology: dict) -> str:
    """One server's shape in words: across its nodes, or on one host."""
    if spans_hosts(topology):
        return "one server across %s (%s), measured at rank 0" % (
            ", ".join(str(n) for n in topology.get("nodes") or []), sizes_text(topology))
    return "one host (%s)" % sizes_text(topology)
