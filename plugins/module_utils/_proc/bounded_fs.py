# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""File-system calls that cannot hang the release on a stuck mount.

A stat of /proc/PID/fd/N or /proc/PID/map_files/START-END follows to the file
itself, and so does reading a script or stat'ing /proc/PID/exe: on a FUSE or
NFS mount whose server stopped answering, that call blocks in the kernel
(request_wait_answer) for as long as the server is gone, and Python cannot
interrupt it. Such calls run in a worker thread here and are waited for only
up to a budget (never past the run's deadline); a call that does not return
raises StuckPath naming the path, and its thread is left blocked (a daemon
thread: the module's exit ends it, as a fatal signal ends a FUSE wait).

Reads of /proc's own files (stat, cmdline, maps, status, the readlink of an fd)
never reach another file system and are not wrapped: the calls that can are
few per run, so the thread hand-off costs little.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError

FS_BUDGET = 5.0  # seconds one call may take (a healthy NFS getattr answers in milliseconds)
_STATE = {"deadline": None}


class StuckPath(GpuFleetError):
    """A file-system call that did not return: the path, and the seconds waited."""

    def __init__(self, path: str, waited: float) -> None:
        self.path = path
        self.waited = waited
        super().__init__("%s did not answer within %.1f s (a hung FUSE or network file system under it: "
                         "its server stopped answering)" % (path, waited))


def set_deadline(deadline: float | None) -> None:
    """The run's monotonic deadline: no call is waited for past it."""
    _STATE["deadline"] = deadline


def _budget():
    left = FS_BUDGET
    if _STATE["deadline"] is not None:
        left = min(left, _STATE["deadline"] - time.monotonic())
    return max(left, 0.05)


def bounded(func: Callable, path: str, *args: Any) -> Any:
    """func(path, *args) in a worker thread; its result or exception, or StuckPath when it blocks."""
    box = {}

    def work():
        try:
            box["value"] = func(path, *args)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=work, name="gpufleet-fs", daemon=True)
    budget = _budget()
    worker.start()
    worker.join(budget)
    if worker.is_alive():
        raise StuckPath(path, budget)
    if "error" in box:
        raise box["error"]
    return box["value"]


def stat(path: str) -> os.stat_result:
    """os.stat(path), bounded (OSError as os.stat raises it)."""
    return bounded(os.stat, path)


def _read_head(path, limit):
    with open(path, "rb") as handle:
        return handle.read(limit)


def read_head(path: str, limit: int) -> str | None:
    """The first `limit` bytes of `path` as text, None when unreadable; bounded."""
    try:
        return bounded(_read_head, path, limit).decode("utf-8", "replace")
    except OSError:
        return None
