# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""File-system calls that cannot hang the release on a stuck mount.

A stat of /proc/PID/fd/N or /proc/PID/map_files/START-END follows to the file
itself, and so does reading a script or stat'ing /proc/PID/exe: on a FUSE or
NFS mount whose server stopped answering, that call blocks in the kernel. Once
the FUSE daemon has read the request, the wait is not even killable
(request_wait_answer): a thread of the module stuck there would keep the whole
module from exiting, and Ansible waits for it. So such calls run in a helper
process forked once per run (its stdio on /dev/null, every other inherited fd
closed, so it holds nothing Ansible waits on), each answered within a budget
(never past the run's deadline). A call that does not return raises StuckPath
naming the path; the helper is then SIGKILLed and left behind (it ends when the
mount answers), and the next call forks a fresh one.

Reads of /proc's own files (stat, cmdline, maps, status, the readlink of an fd)
never reach another file system and are not sent to the helper.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import time

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError

FS_BUDGET = 5.0  # seconds one call may take (a healthy NFS getattr answers in milliseconds)
_FRAME = struct.Struct("<I")
_STATE = {"deadline": None, "helper": None}


class StuckPath(GpuFleetError):
    """A file-system call that did not return: the path, and the seconds waited."""

    def __init__(self, path: str, waited: float) -> None:
        self.path = path
        self.waited = waited
        super().__init__("%s did not answer within %.1f s (a hung FUSE or network file system under it: "
                         "its server stopped answering); nothing more was signalled" % (path, waited))


def set_deadline(deadline: float | None) -> None:
    """The run's monotonic deadline: no call is waited for past it."""
    _STATE["deadline"] = deadline


def _budget():
    left = FS_BUDGET
    if _STATE["deadline"] is not None:
        left = min(left, _STATE["deadline"] - time.monotonic())
    return max(left, 0.05)


# ---------------------------------------------------------------- the helper

def _do(op, path, arg):
    if op == "stat":
        return os.stat(path)
    with open(path, "rb") as handle:
        return handle.read(arg)


def _serve(req_fd, rep_fd):  # pragma: no cover - runs in the helper
    while True:
        request = _read_frame(req_fd, None)
        if request is None:
            return
        op, path, arg = request
        try:
            reply = ("ok", _do(op, path, arg))
        except OSError as exc:
            reply = ("oserror", (exc.errno, exc.strerror, exc.filename))
        _write_frame(rep_fd, reply)


def _write_frame(fd, obj):
    data = pickle.dumps(obj)
    data = _FRAME.pack(len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def _read_exact(fd, size, end):
    buf = b""
    while len(buf) < size:
        if end is not None:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
        chunk = os.read(fd, size - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read_frame(fd, end):
    head = _read_exact(fd, _FRAME.size, end)
    if head is None:
        return None
    body = _read_exact(fd, _FRAME.unpack(head)[0], end)
    return None if body is None else pickle.loads(body)  # nosec - our own child's frames


class _Helper:
    def __init__(self):
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the helper
            try:
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                # Drop every other inherited fd, the module's stdout pipe above all.
                for name in os.listdir("/proc/self/fd"):
                    if int(name) > 2 and int(name) not in (req_r, rep_w, devnull):
                        try:
                            os.close(int(name))
                        except OSError:
                            pass
                _serve(req_r, rep_w)
            finally:
                os._exit(0)
        os.close(req_r)
        os.close(rep_w)
        self.pid, self.req, self.rep = pid, req_w, rep_r
        self.pid_owner = os.getpid()  # a forked child of the module must fork its own

    def call(self, op, path, arg, budget):
        _write_frame(self.req, (op, path, arg))
        return _read_frame(self.rep, time.monotonic() + budget)

    def abandon(self):
        """SIGKILL it and do not wait: it may sit in the stuck call until the mount answers."""
        for fd in (self.req, self.rep):
            os.close(fd)
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, os.WNOHANG)
        except OSError:
            pass

    def close(self):
        for fd in (self.req, self.rep):
            os.close(fd)
        try:
            os.waitpid(self.pid, 0)  # EOF on its pipe ends it
        except OSError:
            pass


def _call(op, path, arg=None, shown=None):
    helper = _STATE["helper"]
    if helper is None or helper.pid_owner != os.getpid():
        helper = _STATE["helper"] = _Helper()
    budget = _budget()
    reply = helper.call(op, path, arg, budget)
    if reply is None:
        helper.abandon()
        _STATE["helper"] = None
        raise StuckPath(shown or path, budget)
    kind, value = reply
    if kind == "oserror":
        raise OSError(*value)
    return value


def close() -> None:
    """End the helper (the run is over)."""
    helper = _STATE["helper"]
    _STATE["helper"] = None
    if helper is not None and helper.pid_owner == os.getpid():
        helper.close()


def stat(path: str, shown: str | None = None) -> os.stat_result:
    """os.stat(path), bounded (OSError as os.stat raises it). `shown`: how a failure names the path."""
    return _call("stat", path, shown=shown)


def read_head(path: str, limit: int) -> str | None:
    """The first `limit` bytes of `path` as text, None when unreadable; bounded."""
    try:
        return _call("read", path, limit).decode("utf-8", "replace")
    except OSError:
        return None
