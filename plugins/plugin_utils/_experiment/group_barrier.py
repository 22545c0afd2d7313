# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A meeting point of a server group's nodes on the controller (group_barrier).

An experiment runs each host at its own pace (strategy free), so the nodes of a variant that spans
hosts reach its launch and its stop at different times: a node of rank >= 1 (which measures nothing)
would stop the group while rank 0 still benchmarks it. Each node, at a step, writes a marker
(DIR/RUN/STEP/NODE) and waits until every node's marker is there; RUN keeps one run's markers
from another's. A node that halts (its GPUs not proven free, so it launches nothing more) leaves the
run (DIR/RUN/_left/NODE, with its reason): a node waiting for it fails at once, naming it and why,
instead of waiting out the timeout.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.store import safe_name

POLL_S = 0.2
LEFT = "_left"


def step_dir(base: str, run: str, step: str) -> str:
    return os.path.join(base, "barriers", safe_name(run), safe_name(step))


def leave(base: str, run: str, node: str, reason: str) -> dict:
    """Mark NODE as gone from RUN (it halted: no later step of any group will see it) with REASON: {left}."""
    where = step_dir(base, run, LEFT)
    os.makedirs(where, exist_ok=True)
    with open(os.path.join(where, safe_name(node)), "w", encoding="utf-8") as handle:
        handle.write(reason.strip() + "\n")
    return {"left": str(node)}


def _left(base: str, run: str, nodes: list) -> dict:
    """{node: its reason} of NODES that left RUN."""
    out = {}
    for node in nodes:
        path = os.path.join(step_dir(base, run, LEFT), safe_name(node))
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                out[node] = handle.read().strip()
    return out


def meet(base: str, run: str, step: str, node: str, nodes: list, timeout: float,
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> dict:
    """Mark NODE at STEP and wait until every one of NODES is marked: {waited, nodes}. InvalidInput naming the nodes
    that did not come within TIMEOUT seconds or left the run (halted), or a NODE that is not one of NODES."""
    nodes = [str(n) for n in nodes]
    if node not in nodes:
        raise InvalidInput("group_barrier: node %s is not one of the nodes %s" % (node, ", ".join(nodes)))
    where = step_dir(base, run, step)
    os.makedirs(where, exist_ok=True)
    with open(os.path.join(where, safe_name(node)), "w", encoding="utf-8") as handle:
        handle.write("%s\n" % time.time())
    started = clock()
    while True:
        missing = [n for n in nodes if not os.path.exists(os.path.join(where, safe_name(n)))]
        if not missing:
            return {"waited": round(clock() - started, 3), "nodes": nodes}
        gone = _left(base, run, missing)
        if gone:
            raise InvalidInput("%s: node(s) %s of the group halted, so they never reach %s: %s"
                               % (node, ", ".join(gone), step, "; ".join("%s: %s" % item for item in gone.items())))
        if clock() - started >= timeout:
            raise InvalidInput("%s: node(s) %s did not reach %s within %s s (each node waits for the others; a node "
                               "that failed or left the play before this step never comes)"
                               % (node, ", ".join(missing), step, timeout))
        sleep(POLL_S)
