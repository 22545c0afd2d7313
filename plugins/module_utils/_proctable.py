# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A snapshot of the process table and the tree relations the release needs."""

from __future__ import annotations

import os

try:
    import psutil
    HAS_PSUTIL = True
    PSUTIL_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - exercised on hosts without psutil
    psutil = None
    HAS_PSUTIL = False
    PSUTIL_IMPORT_ERROR = exc

_ATTRS = ["pid", "ppid", "create_time", "username", "cmdline", "name", "status"]


class ProcInfo:
    """What we know of one process at snapshot time.

    `create_time` identifies the process together with its PID: a PID seen
    again later with another start time is a different process.
    """

    __slots__ = ("pid", "ppid", "create_time", "user", "argv", "name", "status")

    def __init__(self, pid, ppid, create_time, user, argv, name, status):
        self.pid = pid
        self.ppid = ppid
        self.create_time = create_time
        self.user = user
        self.argv = list(argv or [])
        self.name = name or ""
        self.status = status or ""

    @property
    def cmdline(self):
        # /proc/PID/cmdline joined with spaces; setproctitle pads with blanks.
        return " ".join(self.argv).strip()

    @property
    def is_kernel_thread(self):
        # kthreadd is PID 2 and parents every kernel thread (host namespace).
        return self.pid == 2 or self.ppid == 2

    def as_dict(self):
        return {"pid": self.pid, "user": self.user, "cmdline": self.cmdline,
                "state": self.status}


def snapshot():
    """Return {pid: ProcInfo} for every process visible now."""
    table = {}
    for proc in psutil.process_iter(_ATTRS):
        info = proc.info
        if info.get("create_time") is None:
            continue  # vanished while being read
        table[info["pid"]] = ProcInfo(
            info["pid"], info.get("ppid") or 0, info["create_time"],
            info.get("username"), info.get("cmdline"), info.get("name"),
            info.get("status"))
    return table


def children_map(table):
    kids = {}
    for info in table.values():
        kids.setdefault(info.ppid, []).append(info.pid)
    return kids


def descendants(table, roots):
    """Every descendant of `roots` in the snapshot (roots excluded)."""
    kids = children_map(table)
    found, stack = set(), list(roots)
    while stack:
        for child in kids.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found - set(roots)


def ancestors(table, pid):
    """PIDs from `pid`'s parent up to the namespace's PID 1."""
    chain, seen = [], set()
    info = table.get(pid)
    while info is not None and info.ppid and info.ppid not in seen:
        seen.add(info.ppid)
        chain.append(info.ppid)
        info = table.get(info.ppid)
    return chain


def self_pid():
    return os.getpid()
