# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A lock held for the life of one ansible-playbook run: one rollout at a time per router.

Two rollouts through one router (two people, two terminals) would each take workers out counting
on the others staying in: together they can leave the router with none. The lock is a file named
after what it guards (the router's URL) holding the holder's run: the PID of the outermost Ansible
process above the module (ansible-playbook, which lives as long as the run) and that process's
start time, so a PID reused by another process is not mistaken for it. A second run finds the
file, sees its holder alive and is refused, naming it; a holder that is gone (a run killed before
it released the lock) leaves a stale file that the next run takes over. An flock around the read
and the write keeps two runs starting together from both taking it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from typing import Any, Generator

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError

ENTRY_POINTS = ("ansible-playbook", "ansible", "ansible-runner", "ansible-navigator")


class LockHeld(GpuFleetError):
    """Another live run holds the lock."""


def _stat(pid: int) -> tuple | None:
    """(ppid, start time in clock ticks) of PID, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[19])


def _argv(pid: int) -> list:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
    except OSError:
        return []


def _is_entry_point(argv: list) -> bool:
    names = [os.path.basename(a) for a in argv[:2]]
    return any(n in ENTRY_POINTS for n in names)


def run_owner(pid: int | None = None) -> dict:
    """{pid, start, argv} of the outermost Ansible entry point above PID (default: this process);
    this process itself when none is above it (a module run by hand)."""
    pid = os.getpid() if pid is None else pid
    owner = pid
    current = pid
    while current > 1:
        stat = _stat(current)
        if stat is None:
            break
        if _is_entry_point(_argv(current)):
            owner = current
        current = stat[0]
    stat = _stat(owner)
    return {"pid": owner, "start": stat[1] if stat else None, "argv": " ".join(_argv(owner))[:300]}


def alive(holder: dict) -> bool:
    stat = _stat(int(holder.get("pid") or 0)) if holder.get("pid") else None
    return stat is not None and stat[1] == holder.get("start")


def lock_path(lock_dir: str, key: str) -> str:
    return os.path.join(lock_dir, "rollout-%s.lock" % hashlib.sha256(key.encode("utf-8")).hexdigest()[:16])


@contextlib.contextmanager
def _guard(path: str) -> Generator[None, None, None]:
    fd = os.open(path + ".flock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def acquire(lock_dir: str, key: str, what: str, owner: dict | None = None) -> dict:
    """Take the lock on KEY for OWNER (default: this run); LockHeld naming the holder when another
    live run has it. A lock this run holds already is kept (changed false)."""
    owner = owner or run_owner()
    os.makedirs(lock_dir, exist_ok=True)
    path = lock_path(lock_dir, key)
    with _guard(path):
        holder = _read(path)
        if holder and (holder.get("pid"), holder.get("start")) == (owner["pid"], owner["start"]):
            return {"changed": False, "path": path, "holder": holder, "stale": None}
        if holder and alive(holder):
            raise LockHeld("refusing to start: another rollout through %s is running (%s, pid %s: %s); wait for it"
                           " to end, or stop it. One rollout at a time per router: each takes workers out counting"
                           " on the others staying in (lock file %s)"
                           % (key, holder.get("what"), holder.get("pid"), holder.get("argv"), path))
        mine = dict(owner, key=key, what=what)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(mine, handle)
        os.replace(tmp, path)
    return {"changed": True, "path": path, "holder": mine, "stale": holder}


def release(lock_dir: str, key: str, owner: dict | None = None) -> dict:
    """Drop the lock on KEY when this run (OWNER) holds it; another run's lock is left alone."""
    owner = owner or run_owner()
    path = lock_path(lock_dir, key)
    if not os.path.isdir(lock_dir):
        return {"changed": False, "path": path, "holder": None}
    with _guard(path):
        holder = _read(path)
        if holder and (holder.get("pid"), holder.get("start")) == (owner["pid"], owner["start"]):
            os.remove(path)
            return {"changed": True, "path": path, "holder": holder}
    return {"changed": False, "path": path, "holder": holder}


def lock_task(params: dict, **kwargs: Any) -> dict:
    """router_lock: state present (acquire) or absent (release) for params' router_url."""
    if params["state"] == "absent":
        return release(params["lock_dir"], params["router_url"].rstrip("/"), **kwargs)
    return acquire(params["lock_dir"], params["router_url"].rstrip("/"), params["what"], **kwargs)
