# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A server process supervised without systemd: its own session, a state file.

The server starts as the leader of a new session and process group, with its
output appended to a log file, so it outlives the Ansible task and can be
stopped as a group. The state file records PID, start time, process group and
the configuration fingerprint, so a later run knows whether the same server
still runs (a reused PID has another start time).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._files import write_atomic
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.ports import port_holder
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.signals import Target, wait_gone
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo, psutil
from ansible_collections.gpufleet.serving.plugins.module_utils._server.dirs import ensure_dirs
from ansible_collections.gpufleet.serving.plugins.module_utils._server.host_lock import host_lock


def read_state(path: str) -> dict | None:
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _write_state(path, state):
    write_atomic(path, json.dumps(state), mode=0o600)


def _drop_state(path):
    """Remove the state file; one already gone (another stop took it) is no error."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def running_target(state: dict | None) -> Target | None:
    """A Target pinned to the recorded server, or None when it is gone."""
    if not state:
        return None
    info = ProcInfo(state["pid"], 0, state["create_time"], None, state.get("argv"), "", "")
    target = Target(info, "supervised")
    return None if target.gone else target


def status(state_path: str) -> dict:
    state = read_state(state_path)
    target = running_target(state)
    out = {"running": target is not None, "state_file": state_path}
    if state:
        out.update(pid=state.get("pid"), fingerprint=state.get("fingerprint"),
                   log_path=state.get("log_path"), started_at=state.get("started_at"))
    if target is not None:
        target.close()
    return out


def start(argv: list, env: dict | None, log_path: str, state_path: str, fingerprint: str | None, listen: tuple | None = None,
          cwd: str | None = None) -> dict:
    """Launch ARGV in its own session; fail naming the holder if the port is taken."""
    if listen:
        holder = port_holder(listen[0], int(listen[1]))
        if holder:
            raise GpuFleetError("port %s:%s is already in use by %s; stop it or choose another port"
                                % (listen[0], listen[1], holder))
    for directory in sorted({os.path.dirname(log_path), os.path.dirname(state_path)}):
        try:
            os.makedirs(directory, mode=0o750, exist_ok=True)
        except OSError as exc:
            raise GpuFleetError("cannot create %s: %s" % (directory, exc.strerror))
    full_env = dict(os.environ)
    full_env.update({k: str(v) for k, v in (env or {}).items()})
    try:
        # One log per launch (the previous one kept as .1): readiness checks
        # read the log from its start and must not see the last run's lines.
        if os.path.exists(log_path):
            os.replace(log_path, log_path + ".1")
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    except OSError as exc:
        raise GpuFleetError("cannot open the log file %s: %s" % (log_path, exc.strerror))
    try:
        # A detached server (own session, output to the log fd) outlives the module: run_command only waits.
        proc = subprocess.Popen(argv, env=full_env, cwd=cwd or "/", stdin=subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                                stdout=log_fd, stderr=log_fd, close_fds=True, start_new_session=True)
    except OSError as exc:
        raise GpuFleetError("cannot start %s: %s" % (argv[0], exc.strerror or exc))
    finally:
        os.close(log_fd)
    create_time = psutil.Process(proc.pid).create_time()
    state = {"pid": proc.pid, "pgid": proc.pid, "create_time": create_time, "argv": argv,
             "fingerprint": fingerprint, "log_path": log_path, "started_at": time.time()}
    _write_state(state_path, state)
    return state


def stop(state_path: str, stop_timeout: float) -> tuple:
    """SIGTERM the recorded process group, wait for the leader, SIGKILL what is left.

    Returns (changed, details).
    """
    state = read_state(state_path)
    target = running_target(state)
    if target is None:
        if state is not None:
            _drop_state(state_path)
        return False, {"was_running": False}
    pgid = state["pgid"]
    started = time.monotonic()
    # Marked before the first signal: a group's watcher (group_watch.py) reads the ranks that die next as an
    # orderly stop, not a failure.
    _write_state(state_path, dict(state, stopping=time.time()))
    # Like systemd's KillMode=mixed: SIGTERM to the server alone, so it can
    # drain in-flight requests and end its own workers; SIGKILL the rest after.
    target.send(signal.SIGTERM, time.monotonic())
    alive = wait_gone([target], time.monotonic() + stop_timeout)
    if alive:
        target.send(signal.SIGKILL, time.monotonic())
    # Members of the group that outlived the leader (they keep the group ID
    # from being reused, so pinning them by start time is enough).
    members = _group_members(pgid, state["create_time"])
    for member in members:
        member.send(signal.SIGKILL, time.monotonic())
    wait_gone([target] + members, time.monotonic() + 10)
    for pinned in [target] + members:
        pinned.close()
    _drop_state(state_path)
    return True, {"was_running": True, "pid": state["pid"], "graceful": not alive,
                  "stop_seconds": round(time.monotonic() - started, 3)}


def _group_members(pgid, not_before):
    out = []
    for proc in psutil.process_iter(["pid", "create_time"]):
        try:
            if os.getpgid(proc.pid) != pgid or proc.info["create_time"] < not_before - 0.01:
                continue
        except OSError:
            continue
        info = ProcInfo(proc.pid, 0, proc.info["create_time"], None, [], "", "")
        target = Target(info, "group member")
        if not target.gone:
            out.append(target)
    return out


def supervise(params: dict, check_mode: bool = False) -> dict:
    """The server_process module's result for `state` started, stopped or status.

    A start first makes its `dirs` (dirs.py), before the lock file, the state file or the log is
    written in them; the result names them (`dirs_created`, `dirs_mode_set`) when `dirs` is given.
    A start or a stop holds the host lock of its state file (host_lock.py): runs against
    one server take turns, and a later stop finds the server stopped. Status and check
    mode change nothing, so they take no lock (and create no lock file).
    """
    wanted = (params.get("dirs") or []) if params["state"] == "started" else []
    if not wanted:
        return _locked(params, check_mode)
    made = ensure_dirs(wanted, check_mode)
    fields = {"dirs_created": made["created"], "dirs_mode_set": made["mode_set"]}
    touched = bool(made["created"] or made["mode_set"])
    try:
        result = _locked(params, check_mode)
    except GpuFleetError as exc:
        exc.result = dict(exc.result or {}, changed=touched or bool((exc.result or {}).get("changed")), **fields)
        raise
    return dict(result, changed=touched or result["changed"], **fields)


def _locked(params, check_mode):
    if params["state"] == "status" or check_mode:
        return _supervise(params, check_mode)
    with host_lock(params["state_file"], params.get("lock_timeout", 120.0)):
        return _supervise(params, check_mode)


def _supervise(params, check_mode):
    now = status(params["state_file"])
    if params["state"] == "status":
        return dict(now, changed=False)
    if params["state"] == "stopped":
        if check_mode:
            return {"changed": now["running"], "running": False}
        changed, details = stop(params["state_file"], params["stop_timeout"])  # drops a stale state file too
        if not changed:
            return {"changed": False, "running": False, "stop": details,
                    "msg": "already stopped: no running server is recorded in %s" % params["state_file"]}
        return {"changed": changed, "running": False, "pid": now.get("pid"), "stop": details}
    if now["running"]:
        if now.get("fingerprint") != params["fingerprint"]:
            raise GpuFleetError("a server with another configuration runs (pid %s); stop it first" % now.get("pid"))
        return dict(now, changed=False)
    if check_mode:
        return {"changed": True, "running": True}
    listen = (params["listen_host"], params["listen_port"]) if params["listen_port"] else None
    state = start(params["argv"], params["env"], params["log_path"], params["state_file"],
                  params["fingerprint"], listen=listen)
    return {"changed": True, "running": True, "pid": state["pid"], "fingerprint": state["fingerprint"],
            "log_path": state["log_path"]}
