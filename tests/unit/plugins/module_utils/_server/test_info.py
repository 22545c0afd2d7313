# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/info.py: the servers of a state directory (a `sleep` this test starts stands for one that runs), their
group watcher, and the last group-down record, reported or not yet."""

from __future__ import annotations

import json
import subprocess

import psutil
import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._server import info

DOWN = {"group": "server group [a, b]", "node": "b", "rank": 1, "cause": "rank process(es) sglang::scheduler_TP9 exited "
        "(7 of 8 alive)", "log_lines": ["boom"], "seen_by": "a", "at": 5.0, "orderly": False, "stopped": {"killed": []},
        "gpus": {"checked": True, "free": False, "gpus": [{"index": 0, "free": False, "processes": [7]}]}}


@pytest.fixture
def running():
    child = subprocess.Popen(["sleep", "60"])
    yield child
    child.kill()
    child.wait()


def test_servers_their_state_and_the_last_group_down_record(tmp_path, running):
    (tmp_path / "sglang-30000.json").write_text(json.dumps({"pid": running.pid, "create_time": psutil.Process(running.pid).create_time(),
                                                            "log_path": "/x.log"}))
    (tmp_path / "sglang-30000.group-down.json.1").write_text(json.dumps(DOWN))  # already reported by a launch: kept
    (tmp_path / "sglang-30000.group-watch.json").write_text(json.dumps({"pid": running.pid, "start": -1, "server_pid": 1}))
    (tmp_path / "vllm-8000.json").write_text(json.dumps({"pid": 2 ** 22 + 7, "create_time": 1.0}))
    (tmp_path / "sglang-30000.secret.yaml").write_text("api_key: x")
    (tmp_path / "other-1.json").write_text("{}")  # not an engine of the registry
    out = info.server_info({"state_dir": str(tmp_path)})
    assert [(s["engine"], s["port"], s["running"]) for s in out["servers"]] == [("sglang", 30000, True), ("vllm", 8000, False)]
    sglang, vllm = out["servers"]
    assert sglang["last_group_down"] == {key: DOWN[key] for key in info.FAILURE_KEYS}
    assert sglang["group_watcher"]["running"] is False  # the PID's start time is not the watcher's
    assert vllm["last_group_down"] is None and vllm["group_watcher"] is None
    assert out["message"] == ("2 server(s) recorded in %s, 1 running; sglang-30000: its group last went down: node b "
                              "(rank 1): rank process(es) sglang::scheduler_TP9 exited (7 of 8 alive)" % tmp_path)
    assert [s["port"] for s in info.server_info({"state_dir": str(tmp_path), "engine": "vllm"})["servers"]] == [8000]
    assert info.server_info({"state_dir": str(tmp_path), "port": 1})["servers"] == []


def test_a_missing_state_dir_has_no_servers_and_a_file_in_its_place_is_refused(tmp_path):
    assert info.server_info({"state_dir": str(tmp_path / "none")})["servers"] == []
    (tmp_path / "file").write_text("")
    with pytest.raises(InvalidInput, match="is not a directory"):
        info.server_info({"state_dir": str(tmp_path / "file")})
