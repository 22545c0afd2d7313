# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One node of a server group, seen from its processes: the per-host probe of group_readiness.

A node of rank >= 1 serves no API worth asking (SGLang 0.5.23's dummy health server answers 200
whatever its schedulers do; vLLM's headless node serves no HTTP), so its readiness is read from the
process table: the main process the supervisor started (its state file) and, below it, one rank
process per GPU the node runs. wait_ranks() polls until they are all alive, or fails naming the node
when the main process dies or the join deadline passes
(group_readiness.join_deadline: the dist timeout plus a margin).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import nodes as _nodes
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _table
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_readiness, group_watch_start, supervisor


def read_node(state_file: str, engine: str, snapshot: Callable[[], dict] = _table.snapshot) -> dict:
    """{"main": whether the recorded main process lives, "ranks": its live rank processes, "pid"}."""
    target = supervisor.running_target(supervisor.read_state(state_file))
    if target is None:
        return {"main": False, "ranks": 0, "pid": None}
    pid = target.info.pid
    target.close()
    procs = snapshot()
    titles = _nodes.RANK_TITLES.get(engine, ())
    ranks = [p for p in _table.descendants(procs, [pid])
             if procs[p].status != "zombie" and procs[p].cmdline.startswith(titles)]
    return {"main": True, "ranks": len(ranks), "pid": pid}


def _last_lines(path: str, count: int = 8) -> list:
    try:
        with open(path, errors="replace") as handle:
            return handle.read()[-8192:].splitlines()[-count:]
    except OSError:
        return []


def wait_ranks(params: dict, read: Callable[[], dict] | None = None, clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], Any] = time.sleep) -> dict:
    """Wait until this node (PARAMS: group, node, rank, nodes, gpus_per_node, engine, state_file, log_path,
    dist_timeout, elapsed (seconds since the launch when the wait begins), poll_interval) has its main
    process and every rank alive. GpuFleetError naming the group, node and rank otherwise."""
    node = params["node"]
    planned = {params["nodes"][0]: {"rank": 0, "group": params["group"], "gpus_per_node": params["gpus_per_node"]},
               node: {"rank": params["rank"], "group": params["group"], "gpus_per_node": params["gpus_per_node"]}}
    read = read or (lambda: read_node(params["state_file"], params["engine"]))
    start = clock() - float(params.get("elapsed") or 0)
    while True:
        seen = read()
        # Ready as soon as every rank runs; a rank that dies later is the watcher's (group_readiness).
        verdict = group_readiness.assess(planned, True, {node: dict(seen, started=False)},
                                         elapsed=clock() - start, dist_timeout=params.get("dist_timeout"))
        if verdict["ready"]:
            return {"changed": False, "node": node, "rank": params["rank"], "ranks": seen["ranks"], "pid": seen["pid"],
                    "elapsed": round(clock() - start, 2), "message": "node %s (rank %d): %d ranks alive"
                    % (node, params["rank"], seen["ranks"])}
        if verdict["failed"]:
            log = _last_lines(params.get("log_path") or "")
            raise GpuFleetError("%s; last lines of %s: %s" % (verdict["message"], params.get("log_path"), " | ".join(log) or "(none)"),
                                node=node, rank=params["rank"], ranks=seen["ranks"], log_lines=log,
                                elapsed=round(clock() - start, 2))
        sleep(float(params.get("poll_interval") or 0.5))


def wait_and_watch(params: dict) -> dict:
    """wait_ranks(PARAMS), then, with PARAMS["watch"], start the node's dead-rank watcher (group_watch.py):
    rank 0 at once (its watcher listens for the others), every other node once its ranks run."""
    result = wait_ranks(params)
    if params.get("watch", True):
        result.update(group_watch_start.start_watcher(params))
        result["changed"] = result["watcher"]["started"]
        if result.get("last_failure"):
            failed = result["last_failure"]
            result["message"] += "; the group's last run went down: node %s (rank %s): %s" % (
                failed.get("node"), failed.get("rank"), failed.get("cause"))
    return result
