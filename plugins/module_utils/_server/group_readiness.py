# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Readiness of a server group, seen on every rank (issue 36, item 2).

A group is ready only when rank 0 generates and every other rank's processes are alive: its main
process and one scheduler (SGLang) or worker (vLLM) per GPU it runs. A rank's own /health is never
asked: SGLang 0.5.23's ranks >= 1 answer it from launch_dummy_health_check_server
(srt/utils/common.py), 200 whatever their schedulers do, and vLLM's headless nodes serve no HTTP.
A rank found dead fails the group at once, naming its node, instead of the engines' own wait
(SGLang: none; vLLM's head: VLLM_ENGINE_READY_TIMEOUT_S, 600 s).

No I/O: the caller reads each node's processes (the role's per-host probe) and rank 0's generation.
"""

from __future__ import annotations

# Seconds past the dist timeout before a node that has not come up fails the group: the engines' own
# wait (torch's rendezvous) ends at the dist timeout, then the node's log and process need a moment.
JOIN_MARGIN_S = 10.0
# torch's default process-group timeout for NCCL (10 minutes, torch.distributed.constants; torch is not
# in this environment, so quoted, not read), when the group sets no dist_timeout.
TORCH_DEFAULT_TIMEOUT_S = 600.0


def join_deadline(dist_timeout: float | None, margin: float = JOIN_MARGIN_S) -> float:
    """Seconds after the launch by which every node must have started its ranks."""
    return float(dist_timeout or TORCH_DEFAULT_TIMEOUT_S) + margin


def assess(planned: dict, rank0_generates: bool, processes: dict, elapsed: float | None = None,
           dist_timeout: float | None = None) -> dict:
    """PLANNED: group.plan_groups()'s {host: ...} for one group; PROCESSES: {host: {"main": bool, "ranks": the
    count of live schedulers or workers, "started": whether all of them were seen alive once}} for every node but
    rank 0 (a node not read yet: absent). Fewer ranks than GPUs is a node still starting until it has started, a
    dead rank after. With ELAPSED (seconds since the launch) past join_deadline(DIST_TIMEOUT), a node that is
    still not complete has failed: it never joined.

    {"ready", "failed" (the nodes found dead), "waiting" (the nodes not seen complete yet), "message"}."""
    members = sorted(planned, key=lambda h: planned[h]["rank"])
    failed, waiting = [], []
    for host in members[1:]:
        seen = processes.get(host)
        want = planned[host]["gpus_per_node"]
        if seen is None:
            waiting.append(host)
        elif not seen.get("main"):
            failed.append((host, "its main process is gone"))
        elif seen.get("ranks", 0) < want and seen.get("started"):
            failed.append((host, "%d of its %d ranks are alive" % (seen.get("ranks", 0), want)))
        elif seen.get("ranks", 0) < want:
            waiting.append(host)
    if elapsed is not None and elapsed > join_deadline(dist_timeout):
        failed += [(h, "it did not start its ranks within the dist timeout (%d s) + %d s"
                    % (join_deadline(dist_timeout, 0), JOIN_MARGIN_S)) for h in waiting]
        waiting = []
    if not rank0_generates:
        waiting.insert(0, members[0])
    group = planned[members[0]]["group"]
    if failed:
        message = "%s failed: %s" % (group, "; ".join("node %s (rank %d): %s" % (h, planned[h]["rank"], why)
                                                      for h, why in failed))
    elif waiting:
        message = "%s waits for %s" % (group, ", ".join("%s (rank %d)" % (h, planned[h]["rank"]) for h in waiting))
    else:
        message = "%s ready: rank 0 (%s) generates, every rank alive on %d nodes" % (group, members[0], len(members))
    return {"ready": not failed and not waiting, "failed": [h for h, unused in failed], "waiting": waiting,
            "message": message}
