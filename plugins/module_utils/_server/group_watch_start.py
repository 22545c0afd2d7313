# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start a node's dead-rank watcher (group_watch.py) beside its server, detached, once per server.

The watcher runs as `python -c SOURCE CONFIG` in a session of its own, so it outlives the Ansible
task as the server does. Its record (pid, start ticks, the server's pid) sits beside the server's
state file: a later launch that keeps the server keeps its watcher. The last failure a watcher wrote
(FAILURE_SUFFIX, beside the state file) is handed back once, then kept as `.1`, so the next play says
why the group went down.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import nodes as _nodes
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._files import write_atomic
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_watch, supervisor

FAILURE_SUFFIX = ".group-down.json"
WATCHER_SUFFIX = ".group-watch.json"


def _base(state_file: str) -> str:
    return state_file[:-5] if state_file.endswith(".json") else state_file


def failure_file(state_file: str) -> str:
    return _base(state_file) + FAILURE_SUFFIX


def last_failure(state_file: str) -> dict | None:
    """The failure the group's last watcher on this node recorded (None when there is none)."""
    for path in (failure_file(state_file), failure_file(state_file) + ".1"):
        try:
            with open(path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            continue
    return None


def server_gpus(pid: int) -> list | None:
    """The GPUs the server at PID was started on (its CUDA_VISIBLE_DEVICES, as the server_plan's `gpus` set it);
    None (every GPU of the host) when it names none or its environment cannot be read."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as handle:
            return group_watch.visible_gpus(handle.read())
    except OSError:
        return None


def _alive(record: dict | None) -> bool:
    if not record:
        return False
    stat = group_watch.proc_stat(int(record.get("pid") or 0))
    return stat is not None and stat[3] == record.get("start") and stat[0] != "Z"


def start_watcher(params: dict) -> dict:
    """Start the watcher of this node (PARAMS: group, node, rank, nodes, gpus_per_node, dist_addr, dist_port,
    engine, state_file, log_path) unless one already watches the same server. {"watcher": {...}, "last_failure"}."""
    state = supervisor.read_state(params["state_file"])
    if not state:
        raise GpuFleetError("no server is recorded in %s: nothing to watch" % params["state_file"])
    server = group_watch.proc_stat(int(state["pid"]))
    if server is None:
        raise GpuFleetError("the server recorded in %s (pid %s) is gone" % (params["state_file"], state["pid"]))
    record_path = _base(params["state_file"]) + WATCHER_SUFFIX
    previous = supervisor.read_state(record_path)
    if _alive(previous) and previous.get("server_pid") == state["pid"]:
        return {"watcher": dict(previous, started=False), "last_failure": None}
    failed = None
    try:
        with open(failure_file(params["state_file"])) as handle:
            failed = json.load(handle)
        os.replace(failure_file(params["state_file"]), failure_file(params["state_file"]) + ".1")
    except (OSError, ValueError):
        pass
    config = {"group": params.get("group"), "node": params["node"], "rank": int(params["rank"]),
              "gpus_per_node": int(params["gpus_per_node"]), "titles": list(_nodes.RANK_TITLES.get(params["engine"], ())),
              "pid": int(state["pid"]), "start": server[3], "state_file": params["state_file"],
              "log_path": params.get("log_path") or "", "failure_file": failure_file(params["state_file"]),
              "addr": params["dist_addr"], "port": group_watch.watch_port(params["dist_port"]),
              "poll": float(params.get("watch_poll") or group_watch.POLL_S), "grace": group_watch.GRACE_S,
              "gpus": server_gpus(int(state["pid"])), "verify": group_watch.VERIFY_S, "idle_mib": group_watch.IDLE_MIB}
    log_path = (params.get("log_path") or _base(params["state_file"])) + ".group-watch.log"
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    try:
        # Detached like the server (supervisor.start): the watcher must outlive this module.
        proc = subprocess.Popen([sys.executable, "-c", inspect.getsource(group_watch), json.dumps(config)],  # pylint: disable=ansible-bad-function
                                stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, close_fds=True,
                                start_new_session=True, cwd="/")
    except OSError as exc:
        raise GpuFleetError("cannot start the group watcher: %s" % (exc.strerror or exc))
    finally:
        os.close(log_fd)
    stat = group_watch.proc_stat(proc.pid)
    record = {"pid": proc.pid, "start": stat[3] if stat else None, "server_pid": state["pid"],
              "port": config["port"], "addr": config["addr"], "log_path": log_path}
    write_atomic(record_path, json.dumps(record), mode=0o600)
    return {"watcher": dict(record, started=True), "last_failure": failed}
