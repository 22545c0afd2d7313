# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/group_ranks.py: a node of rank >= 1 is complete when its main process and one rank per GPU are
alive; it fails naming the group, node and rank when the main process dies or the ranks are not up by the dist
timeout + 10 s. Read on a fake clock; the process table faked."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_ranks
from tests.support.timing import FakeClock

PARAMS = {"group": "server group [a, b]", "nodes": ["a", "b"], "node": "b", "rank": 1, "gpus_per_node": 2,
          "engine": "sglang", "state_file": "/nonexistent", "log_path": "", "dist_timeout": 5, "poll_interval": 1}


def run(readings, **params):
    """wait_ranks over READINGS (one a poll; the last repeats)."""
    clock, seen = FakeClock(100.0), list(readings)
    return group_ranks.wait_ranks(dict(PARAMS, **params), read=lambda: seen.pop(0) if len(seen) > 1 else seen[0],
                                  clock=clock, sleep=clock.sleep), clock


def node(ranks, main=True):
    return {"main": main, "ranks": ranks, "pid": 7 if main else None}


def test_ready_once_every_rank_runs():
    result, clock = run([node(0), node(1), node(2)])
    assert (result["ranks"], result["rank"], result["elapsed"]) == (2, 1, 2.0)
    assert result["message"] == "node b (rank 1): 2 ranks alive"


@pytest.mark.parametrize("readings, words", [
    ([node(0), node(0, main=False)], "node b (rank 1): its main process is gone"),
    ([node(1)], "node b (rank 1): it did not start its ranks within the dist timeout (5 s) + 10 s"),
], ids=["main-died", "never-joined"])
def test_a_node_that_fails_is_named(readings, words):
    with pytest.raises(GpuFleetError) as err:
        run(readings)
    assert err.value.msg.startswith("server group [a, b] failed: " + words), err.value.msg
    assert err.value.details["node"] == "b" and err.value.details["rank"] == 1
    assert err.value.msg.endswith("last lines of : (none)")


def test_never_joined_fails_just_past_the_dist_timeout_and_margin():
    with pytest.raises(GpuFleetError) as err:
        run([node(0)], elapsed=3)
    # 3 s had passed at the launch: the wait fails 5 + 10 s after the launch, not after it began.
    assert 12.0 < err.value.details["elapsed"] <= 16.0, err.value.details


def test_the_failure_carries_the_last_log_lines(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("".join("line %d\n" % i for i in range(20)))
    with pytest.raises(GpuFleetError) as err:
        run([node(0, main=False)], log_path=str(log))
    assert err.value.details["log_lines"] == ["line %d" % i for i in range(12, 20)]
    assert err.value.msg.endswith("line 18 | line 19")


def test_read_node_counts_the_rank_titles_below_the_main_process(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        import psutil
        state = tmp_path / "state.json"
        state.write_text(json.dumps({"pid": child.pid, "create_time": psutil.Process(child.pid).create_time()}))
        table = {child.pid: ProcInfo(child.pid, 1, 0.0, None, ["python"], "python", "sleeping"),
                 11: ProcInfo(11, child.pid, 0.0, None, ["sglang::scheduler_TP8"], "python", "sleeping"),
                 12: ProcInfo(12, child.pid, 0.0, None, ["sglang::scheduler_TP9"], "python", "zombie"),
                 13: ProcInfo(13, 11, 0.0, None, ["sglang::scheduler_TP10"], "python", "running"),
                 14: ProcInfo(14, child.pid, 0.0, None, ["sglang::detokenizer"], "python", "sleeping")}
        seen = group_ranks.read_node(str(state), "sglang", snapshot=lambda: table)
        assert seen == {"main": True, "ranks": 2, "pid": child.pid}
        assert group_ranks.read_node(str(state), "vllm", snapshot=lambda: table)["ranks"] == 0
    finally:
        child.kill()
        child.wait()
    assert group_ranks.read_node(str(state), "sglang") == {"main": False, "ranks": 0, "pid": None}
    assert group_ranks.read_node(os.path.join(str(tmp_path), "none.json"), "sglang")["main"] is False


def test_rank_0_waits_for_nothing_starts_its_watcher_and_names_the_last_failure(monkeypatch):
    started = []
    failure = {"node": "b", "rank": 1, "cause": "rank process(es) sglang::scheduler_TP3 exited (1 of 2 alive)"}
    monkeypatch.setattr(group_ranks.group_watch_start, "start_watcher",
                        lambda params: started.append(params["node"]) or {"watcher": {"started": True},
                                                                          "last_failure": failure})
    result = group_ranks.wait_and_watch(dict(PARAMS, node="a", rank=0, watch=True))
    assert started == ["a"] and result["changed"]
    assert result["message"].endswith("the group's last run went down: node b (rank 1): " + failure["cause"])
    assert "watcher" not in group_ranks.wait_and_watch(dict(PARAMS, node="a", rank=0, watch=False))
