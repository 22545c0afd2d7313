# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/group_watch_start.py: the watcher runs detached beside the server, once per server; when the server
(a `sleep` this test starts, on loopback) dies, the watcher records it, and the next start hands that record back
once and keeps it as `.1`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_watch, group_watch_start
from tests.support.net import free_port
from tests.support.polling import poll


def _gone(pid):
    stat = group_watch.proc_stat(pid)
    return stat is None or stat[0] == "Z"


def _params(tmp_path, pid):
    state = tmp_path / "sglang-30000.json"
    state.write_text(json.dumps({"pid": pid}))
    return {"group": "server group [a, b]", "node": "a", "rank": 0, "nodes": ["a", "b"], "gpus_per_node": 1,
            "engine": "sglang", "state_file": str(state), "log_path": str(tmp_path / "sglang-30000.log"),
            "dist_addr": "127.0.0.1", "dist_port": free_port() - group_watch.WATCH_PORT_OFFSET, "watch_poll": 0.05}


def test_a_watcher_starts_once_records_its_servers_death_and_the_next_start_reports_it(tmp_path):
    servers, watchers = [], []
    try:
        servers.append(subprocess.Popen(["sleep", "60"], start_new_session=True))
        params = _params(tmp_path, servers[0].pid)
        first = group_watch_start.start_watcher(params)
        watchers.append(first["watcher"]["pid"])
        assert first["watcher"]["started"] and first["last_failure"] is None
        assert first["watcher"]["port"] == params["dist_port"] + group_watch.WATCH_PORT_OFFSET
        assert not group_watch_start.start_watcher(params)["watcher"]["started"]  # the same server: kept

        servers[0].send_signal(signal.SIGKILL)
        servers[0].wait()
        failure = poll(lambda: group_watch_start.last_failure(params["state_file"]), 10, what="the failure record")
        assert (failure["node"], failure["rank"], failure["cause"]) == ("a", 0, "its main process is gone")
        poll(lambda: _gone(watchers[0]), 10, what="the watcher's exit")

        servers.append(subprocess.Popen(["sleep", "60"], start_new_session=True))
        params = {**_params(tmp_path, servers[1].pid), "dist_port": params["dist_port"]}
        again = group_watch_start.start_watcher(params)
        watchers.append(again["watcher"]["pid"])
        assert again["watcher"]["started"] and again["last_failure"]["cause"] == "its main process is gone"
        assert os.path.exists(group_watch_start.failure_file(params["state_file"]) + ".1")
    finally:
        for pid in watchers:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
        for server in servers:
            if server.poll() is None:
                server.kill()
                server.wait()


def test_no_server_recorded_is_refused(tmp_path):
    params = _params(tmp_path, 1)
    os.unlink(params["state_file"])
    with pytest.raises(GpuFleetError, match="no server is recorded in"):
        group_watch_start.start_watcher(params)


def test_the_watcher_verifies_the_gpus_the_server_was_started_on():
    server = subprocess.Popen(["sleep", "60"], env=dict(os.environ, CUDA_VISIBLE_DEVICES="2,3"))
    try:
        # /proc/PID/environ is the forked parent's until the exec: wait for the exec (its cmdline), with a deadline.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open("/proc/%d/cmdline" % server.pid, "rb") as handle:
                if handle.read().startswith(b"sleep\0"):
                    break
            time.sleep(0.01)
        assert group_watch_start.server_gpus(server.pid) == ["2", "3"]
    finally:
        server.kill()
        server.wait()
    assert group_watch_start.server_gpus(server.pid) is None  # gone: every GPU of the host
