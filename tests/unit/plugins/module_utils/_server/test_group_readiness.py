# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A group is ready when rank 0 generates and every other rank's processes are alive; never from a dummy /health."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_readiness as gr

MEMBERS = ["gpu-a", "gpu-b", "gpu-c"]
PLANNED = {h: {"group": "server group [gpu-a, gpu-b, gpu-c]", "rank": r, "gpus_per_node": 8}
           for r, h in enumerate(MEMBERS)}
ALL = {"main": True, "ranks": 8, "started": True}


def test_ready_only_when_rank_0_generates_and_every_rank_is_alive():
    out = gr.assess(PLANNED, True, {"gpu-b": ALL, "gpu-c": ALL})
    assert out == {"ready": True, "failed": [], "waiting": [],
                   "message": "server group [gpu-a, gpu-b, gpu-c] ready: rank 0 (gpu-a) generates, every rank "
                              "alive on 3 nodes"}


@pytest.mark.parametrize("generates, processes, waiting", [
    (False, {"gpu-b": ALL, "gpu-c": ALL}, ["gpu-a"]),
    (True, {"gpu-b": ALL}, ["gpu-c"]),
    (True, {"gpu-b": ALL, "gpu-c": {"main": True, "ranks": 3}}, ["gpu-c"]),  # still starting
])
def test_not_ready_while_a_node_is_starting(generates, processes, waiting):
    out = gr.assess(PLANNED, generates, processes)
    assert (out["ready"], out["failed"], out["waiting"]) == (False, [], waiting)


def test_a_dead_rank_fails_the_group_naming_the_node_even_while_rank_0_generates():
    out = gr.assess(PLANNED, True, {"gpu-b": dict(ALL, ranks=7), "gpu-c": {"main": False}})
    assert (out["ready"], out["failed"]) == (False, ["gpu-b", "gpu-c"])
    assert out["message"] == ("server group [gpu-a, gpu-b, gpu-c] failed: node gpu-b (rank 1): 7 of its 8 ranks are "
                              "alive; node gpu-c (rank 2): its main process is gone")


def test_a_node_that_never_joined_fails_after_the_dist_timeout_and_the_margin():
    starting = {"gpu-b": ALL, "gpu-c": {"main": True, "ranks": 0}}
    assert gr.assess(PLANNED, False, starting, elapsed=130, dist_timeout=120)["failed"] == []
    out = gr.assess(PLANNED, False, starting, elapsed=130.5, dist_timeout=120)
    assert (out["failed"], out["waiting"]) == (["gpu-c"], ["gpu-a"])
    assert out["message"] == ("server group [gpu-a, gpu-b, gpu-c] failed: node gpu-c (rank 2): it did not start its "
                              "ranks within the dist timeout (120 s) + 10 s")
    assert gr.join_deadline(None) == 610.0  # torch's default
