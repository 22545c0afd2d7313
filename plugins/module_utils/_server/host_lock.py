# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One server_process run at a time per server on a host: an flock on STATE_FILE.lock.

Two runs against one server (two swaps started together, a host listed twice in an
inventory, two teardowns) would otherwise both read the state file, both signal the
server and both remove the file. The lock serialises them: the later run waits (at most
`timeout` seconds) and then sees what the earlier one left. The kernel drops an flock
when its holder exits, so a killed run never leaves the server locked. The lock file
stays (removing it would let a third run lock a file the second one no longer sees).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from typing import Generator

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError

_RETRY_S = 0.05


def _holder(fd):
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return "?"
    return text if text.isdigit() else "?"


@contextlib.contextmanager
def host_lock(state_path: str, timeout: float) -> Generator[str, None, None]:
    """Hold STATE_PATH.lock for the block; fail naming the holder after `timeout` seconds."""
    path = state_path + ".lock"
    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o750, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise GpuFleetError("cannot open the lock file %s: %s" % (path, exc.strerror))
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise GpuFleetError("cannot lock %s: %s" % (path, exc.strerror))
                if time.monotonic() >= deadline:
                    raise GpuFleetError(
                        "another server_process run (pid %s) holds %s and did not finish within lock_timeout "
                        "(%g s): two runs against one server at once (two plays started together, or the host "
                        "listed twice in the inventory?); run them one after the other, or raise lock_timeout"
                        % (_holder(fd), path, timeout))
                time.sleep(_RETRY_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"%d\n" % os.getpid(), 0)  # for the message another run shows
        yield path
    finally:
        os.close(fd)  # releases the lock
