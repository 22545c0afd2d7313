# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A snapshot of the process table and the tree relations the release needs.

The snapshot reads the cheap facts of every process straight from /proc
(one read of /proc/PID/stat and one of /proc/PID/cmdline); the owner's name,
the executable and the environment are read only for the few processes that
need them (lazily), so a host with thousands of idle processes costs little.

`cmdline_snapshot` reads less still: each process's cmdline only, which is what
matching patterns needs; a process's stat (parent, start time, state) is read
when that process is first looked up (a match, a GPU holder, an ancestor), and
every process's only when a whole-table question is asked (`values`, `items`).
"""

from __future__ import annotations

import os
import pwd
import sys
import time
from collections.abc import Mapping, Set
from typing import Any, Iterator

try:
    import psutil
    HAS_PSUTIL = True
except ImportError:  # pragma: no cover - exercised on hosts without psutil
    psutil = None
    HAS_PSUTIL = False

PROC = "/proc"


# include/linux/sched.h: "I am a kernel thread". PPID 2 is no proof: in a PID
# namespace PID 2 is an ordinary process (the launcher under tini).
PF_KTHREAD = 0x00200000
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# psutil's names for /proc/PID/stat states (psutil._pslinux.PROC_STATUSES).
STATES = {"R": "running", "S": "sleeping", "D": "disk-sleep", "T": "stopped", "t": "tracing-stop",
          "Z": "zombie", "X": "dead", "x": "dead", "K": "wake-kill", "W": "waking", "I": "idle",
          "P": "parked"}
_UNSET = object()
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # os.fsdecode's
_USERS = {}


def user_name(uid: int) -> str:
    """The account name of `uid` (as psutil says it), or the number as text."""
    if uid is None:
        return None
    if uid not in _USERS:
        try:
            _USERS[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            _USERS[uid] = str(uid)
    return _USERS[uid]


class ProcInfo:
    """What we know of one process at snapshot time.

    `create_time` identifies the process together with its PID: a PID seen
    again later with another start time is a different process. `user`, `uid`,
    `exe` and `environ` are read from /proc when first asked for.
    """

    __slots__ = ("pid", "ppid", "create_time", "argv", "name", "status", "flags", "sid", "pgrp",
                 "threads", "_user", "_uid", "_exe", "_environ", "proc_root")

    def __init__(self, pid: int, ppid: int, create_time: float, user: str | None, argv: list | None, name: str | None,
                 status: str | None, **facts: Any) -> None:
        self.pid = pid
        self.ppid = ppid
        self.create_time = create_time
        self._user = user if user is not None else _UNSET
        self.argv = list(argv or [])
        self.name = name or ""
        self.status = status or ""
        self.flags = facts.get("flags")
        self.sid = facts.get("sid")
        self.pgrp = facts.get("pgrp")
        self.threads = facts.get("threads", 1)
        self._uid = facts.get("uid", _UNSET)
        self._exe = facts.get("exe", _UNSET)
        self._environ = facts.get("environ", _UNSET)
        self.proc_root = facts.get("proc_root", PROC)

    @property
    def cmdline(self) -> str:
        # /proc/PID/cmdline joined with spaces; setproctitle pads with blanks.
        return " ".join(self.argv).strip()

    @property
    def is_kernel_thread(self) -> bool:
        if self.flags is not None:
            return bool(self.flags & PF_KTHREAD)
        # Hand-built records without flags: kthreadd itself.
        return self.pid == 2 and self.ppid == 0

    @property
    def uid(self) -> int:
        """Real user ID (from /proc/PID/status), None when unreadable."""
        if self._uid is _UNSET:
            self._uid = None
            try:
                with open("%s/%d/status" % (self.proc_root, self.pid), "rb") as handle:
                    for line in handle:
                        if line.startswith(b"Uid:"):
                            self._uid = int(line.split()[1])
                            break
            except (OSError, ValueError, IndexError):
                pass
        return self._uid

    @property
    def user(self) -> str:
        if self._user is _UNSET:
            self._user = user_name(self.uid)
        return self._user

    @property
    def exe(self) -> str | None:
        """The executable's path (readlink of /proc/PID/exe), None when unreadable."""
        if self._exe is _UNSET:
            try:
                self._exe = os.readlink("%s/%d/exe" % (self.proc_root, self.pid))
            except OSError:
                self._exe = None
        return self._exe

    @property
    def environ(self) -> dict | None:
        """{name: value} from /proc/PID/environ, or None when it cannot be read."""
        if self._environ is _UNSET:
            self._environ = read_environ(self.pid, self.proc_root)
        return self._environ

    def as_dict(self) -> dict:
        return {"pid": self.pid, "user": self.user, "cmdline": self.cmdline,
                "state": self.status}


def read_environ(pid: int, proc_root: Any = PROC) -> dict | None:
    try:
        with open("%s/%d/environ" % (proc_root, pid), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    out = {}
    for item in data.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[os.fsdecode(key)] = os.fsdecode(value)
    return out


def _boot_time():
    if HAS_PSUTIL:
        return psutil.boot_time()
    with open(PROC + "/stat", "rb") as handle:  # pragma: no cover - psutil is required
        for line in handle:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    return 0.0  # pragma: no cover


def parse_stat(data: bytes) -> tuple:
    """(comm, fields after comm) of a /proc/PID/stat line."""
    close = data.rindex(b")")
    return data[data.index(b"(") + 1:close], data[close + 2:].split()


def _argv(data):
    """psutil's reading of /proc/PID/cmdline (NUL-separated; one blank-separated title)."""
    if not data:
        return []
    text = data.decode(_FS_ENCODING, _FS_ERRORS)
    if text.endswith("\0"):
        text = text[:-1]
    return text.split("\0") if "\0" in text else text.split(" ")


def read_file(path: str) -> bytes:
    """The whole file (OSError when unreadable), with raw os calls: cheaper than open() for thousands of small reads."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, 4096)]
        while len(chunks[-1]) == 4096:
            chunks.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_one(pid: int, boot: float | None = None, proc_root: Any = PROC) -> ProcInfo | None:
    """ProcInfo for `pid` from /proc/PID/stat and cmdline, or None when it is gone."""
    return _read_one(pid, _boot_time() if boot is None else boot, "%s/%d/" % (proc_root, pid), proc_root)


def _read_one(pid, boot, base, proc_root):
    # The one pass of a snapshot: per process one read of stat and (a kernel thread has none)
    # one of cmdline; nothing else is opened here. Inlined: at 10,000 processes each call counts.
    try:
        fd = os.open(base + "stat", os.O_RDONLY)
        try:
            stat = os.read(fd, 4096)  # a stat line is far shorter: 52 numbers and a 64-byte comm at most
        finally:
            os.close(fd)
        close = stat.rindex(b")")
        fields = stat[close + 2:].split(None, 20)  # up to starttime; the 30 fields after it are not needed
        flags = int(fields[6])
        cmd = b"" if flags & PF_KTHREAD else read_file(base + "cmdline")
    except (OSError, ValueError):
        return None
    info = ProcInfo.__new__(ProcInfo)
    # Fields after comm: state(3) ppid(4) pgrp(5) session(6) ... flags(9) ...
    # num_threads(20) ... starttime(22), numbered as in proc(5).
    state = fields[0].decode()
    info.pid, info.ppid, info.pgrp, info.sid = pid, int(fields[1]), int(fields[2]), int(fields[3])
    info.create_time = float(fields[19]) / CLOCK_TICKS + boot
    info.argv = _argv(cmd)
    info.name = stat[stat.index(b"(") + 1:close].decode(_FS_ENCODING, _FS_ERRORS)
    info.status = STATES.get(state, state)
    info.flags, info.threads = flags, int(fields[17])
    info._user = info._uid = info._exe = info._environ = _UNSET  # pylint: disable=protected-access
    info.proc_root = proc_root
    return info


def snapshot(proc_root: Any = PROC) -> dict:
    """Return {pid: ProcInfo} for every process visible now."""
    table = {}
    boot = _boot_time()
    for entry in os.listdir(proc_root):
        if entry.isdigit():
            info = _read_one(int(entry), boot, "%s/%s/" % (proc_root, entry), proc_root)
            if info is not None:
                table[info.pid] = info
    return table


class ProcTable(Mapping):
    """{pid: ProcInfo} of one pass that read each process's cmdline only.

    Keys are the processes the pass saw. A record is built on first lookup from
    the process's stat and a fresh read of its cmdline (the record's own facts,
    read in the same order as `snapshot` reads them), and only when that process
    started before the pass ended: a PID taken by a new process since is not the
    process the pass saw, so it counts as gone (PID reuse).
    """

    def __init__(self, proc_root: Any = PROC) -> None:
        self.proc_root = proc_root
        self.boot = _boot_time()
        self._infos = {}
        self._gone = set()
        self._complete = False
        self._cmdlines, self._pids = _read_cmdlines(proc_root)
        # Start times are in clock ticks since boot; a process that started later is another one.
        self._latest_start = time.clock_gettime(time.CLOCK_BOOTTIME) * CLOCK_TICKS + 1

    def cmdlines(self) -> Any:
        """(pid, cmdline) of every process with a command line, as the pass read them."""
        return self._cmdlines.items()

    def __getitem__(self, pid: int) -> ProcInfo:
        info = self._infos.get(pid)
        if info is not None:
            return info
        if pid in self._gone or pid not in self._pids:
            raise KeyError(pid)
        info = _read_one(pid, self.boot, "%s/%d/" % (self.proc_root, pid), self.proc_root)
        if info is None or (info.create_time - self.boot) * CLOCK_TICKS > self._latest_start:
            self._gone.add(pid)
            raise KeyError(pid)
        self._infos[pid] = info
        return info

    def known(self, pid: int) -> ProcInfo | None:
        """The record of `pid` if it was looked up already (nothing is read), else None."""
        return self._infos.get(pid)

    def _fill(self):
        if not self._complete:
            for pid in self._pids:
                self.get(pid)
            self._complete = True

    def __iter__(self) -> Iterator[int]:
        if self._complete:
            return iter(self._infos)
        return (pid for pid in self._pids if pid not in self._gone)

    def __len__(self) -> int:
        return len(self._infos) if self._complete else len(self._pids) - len(self._gone)

    def values(self) -> Any:
        self._fill()
        return self._infos.values()

    def items(self) -> Any:
        self._fill()
        return self._infos.items()


def _read_cmdlines(proc_root):
    """({pid: cmdline} of processes with a command line, {every pid seen}) in one pass, one file each."""
    cmdlines, pids = {}, set()
    read, close, fs_encoding, fs_errors = os.read, os.close, _FS_ENCODING, _FS_ERRORS
    for entry in os.listdir(proc_root):
        if not entry.isdigit():
            continue
        try:
            fd = os.open("%s/%s/cmdline" % (proc_root, entry), os.O_RDONLY)
            try:
                data = read(fd, 4096)
                if len(data) == 4096:
                    chunks = [data]
                    while len(chunks[-1]):
                        chunks.append(read(fd, 65536))
                    data = b"".join(chunks)
            finally:
                close(fd)
        except OSError:
            continue  # gone
        pid = int(entry)
        pids.add(pid)
        if data:  # empty for kernel threads and zombies: no argv, nothing to match
            # ProcInfo.cmdline of _argv(data): NULs (and a trailing one) as blanks, stripped.
            cmdlines[pid] = data.decode(fs_encoding, fs_errors).replace("\0", " ").strip()
    return cmdlines, pids


def cmdline_snapshot(proc_root: Any = PROC) -> ProcTable:
    """The processes visible now, each read from its cmdline alone until looked up (ProcTable)."""
    return ProcTable(proc_root)


def command_lines(table: Mapping) -> Any:
    """(pid, cmdline) of each process of `table` that has a command line."""
    if isinstance(table, ProcTable):
        return table.cmdlines()
    return [(pid, info.cmdline) for pid, info in table.items() if info.argv]


def record_if_read(table: Mapping, pid: int) -> ProcInfo | None:
    """`pid`'s record where it costs no read of /proc (a ProcTable's looked-up ones), else None."""
    if isinstance(table, ProcTable):
        return table.known(pid)
    return table.get(pid)


class Subtree(Set):
    """`root` and its descendants in `table`, asked one PID at a time.

    Membership walks the asked PID's ancestors (a few lookups), so a ProcTable
    reads no other process's stat; iterating it reads the whole table.
    """

    def __init__(self, table: Mapping, root: int) -> None:
        self.table = table
        self.root = root
        self._known = {root: True}

    @classmethod
    def _from_iterable(cls, it):
        return set(it)

    def __contains__(self, pid: object) -> bool:
        if pid not in self._known:
            self._known[pid] = self.root in ancestors(self.table, pid)
        return self._known[pid]

    def __iter__(self) -> Iterator[int]:
        return iter(descendants(self.table, [self.root]) | {self.root})

    def __len__(self) -> int:
        return len(descendants(self.table, [self.root])) + 1


def children_map(table: dict) -> dict:
    kids = {}
    for info in table.values():
        kids.setdefault(info.ppid, []).append(info.pid)
    return kids


def descendants(table: dict, roots: list, stop: Any = None) -> set:
    """Every descendant of `roots` in the snapshot (roots excluded).

    `stop(pid)`: when true, the descent does not enter that process (nor below it).
    """
    kids = children_map(table)
    found, stack = set(), list(roots)
    while stack:
        for child in kids.get(stack.pop(), ()):
            if child not in found and not (stop and stop(child)):
                found.add(child)
                stack.append(child)
    return found - set(roots)


def ancestors(table: dict, pid: int) -> list:
    """PIDs from `pid`'s parent up to the namespace's PID 1."""
    chain, seen = [], set()
    info = table.get(pid)
    while info is not None and info.ppid and info.ppid not in seen:
        seen.add(info.ppid)
        chain.append(info.ppid)
        info = table.get(info.ppid)
    return chain


def self_pid() -> int:
    return os.getpid()
