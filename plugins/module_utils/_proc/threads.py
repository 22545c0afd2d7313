# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A process is its thread group, not its leader, and what it does with SIGTERM.

When a process's main thread exits (pthread_exit) while other threads run on,
/proc/PID shows the leader as a zombie with an empty cmdline, maps and fd list,
yet the other threads keep the address space, the GPU context and its memory
(measured on an H200: 11,281 MiB held this way). Liveness, the name and the
state are therefore read per thread group, through /proc/PID/task/*.

A process cannot act on SIGTERM when it ignores it (SigIgn), when every thread
blocks it (SigBlk), or when it is PID 1 of its own PID namespace without a
handler (SigCgt): the kernel drops such a signal from an ancestor namespace.
Waiting term_timeout for it helps nobody; it gets SIGKILL at once. A thread in
ptrace stop (state t: a debugger or profiler holds it) acts on no signal until
its tracer lets it go, SIGKILL excepted: it gets SIGKILL at once too.

A process stopped by job control (state T: Ctrl-Z, SIGSTOP) keeps SIGTERM
pending until it is continued; it gets SIGCONT right after SIGTERM, as systemd
does (systemd.kill(5), SendSIGCONT=), so it acts on SIGTERM at once.
"""

from __future__ import annotations

import os

from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import read_file

SIGTERM_BIT = 1 << (15 - 1)  # bit N-1 of the /proc/PID/status masks is signal N
_DEAD = ("Z", "X", "x")
_STATES = {"R": "running", "S": "sleeping", "D": "disk-sleep", "T": "stopped", "t": "tracing-stop",
           "I": "idle", "W": "waking", "P": "parked"}


def _read_or_none(path, binary=False):
    """The file's bytes (binary) or text, or None when it cannot be read (the task is gone)."""
    try:
        data = read_file(path)
    except OSError:
        return None
    return data if binary else data.decode("utf-8", "replace")


def _state_of(stat_text):
    return stat_text.rsplit(")", 1)[1].split()[0] if stat_text else None


def live_tasks(pid: int, proc: str = "/proc") -> list:
    """[(tid, state letter)] of the threads of `pid` that have not exited."""
    try:
        tids = os.listdir("%s/%d/task" % (proc, pid))
    except OSError:
        return []
    out = []
    for tid in sorted(tids, key=lambda t: int(t) if t.isdigit() else 0):
        state = _state_of(_read_or_none("%s/%d/task/%s/stat" % (proc, pid, tid)))
        if state and state not in _DEAD:
            out.append((int(tid), state))
    return out


def leader_exited(pid: int, proc: str = "/proc") -> list:
    """The live threads of a group whose leader is a zombie, else []."""
    if _state_of(_read_or_none("%s/%d/stat" % (proc, pid))) != "Z":
        return []
    return live_tasks(pid, proc)


def group_cmdline(pid: int, proc: str = "/proc") -> str:
    """The command line read through a live thread (the leader's reads empty once it exited)."""
    for tid, _state in live_tasks(pid, proc):
        raw = _read_or_none("%s/%d/task/%d/cmdline" % (proc, pid, tid), binary=True)
        if raw:
            return raw.replace(b"\0", b" ").decode("utf-8", "surrogateescape").strip()
    return ""


def group_state(pid: int, proc: str = "/proc") -> str:
    """E.g. 'sleeping (main thread exited, 3 threads live)', or None when the leader is not a zombie."""
    tasks = leader_exited(pid, proc)
    if not tasks:
        return None
    letters = sorted({s for _t, s in tasks}, key="DRSTtIWP".find)
    return "%s (main thread exited, %d thread%s live)" % (
        _STATES.get(letters[0], letters[0]), len(tasks), "" if len(tasks) == 1 else "s")


def _masks(text):
    out = {}
    for line in (text or "").splitlines():
        key, _sep, value = line.partition(":")
        if key in ("SigIgn", "SigBlk", "SigCgt"):
            out[key] = int(value.strip() or "0", 16)
        elif key == "TracerPid":
            out[key] = value.strip()
        elif key == "NSpid":
            out[key] = value.split()
    return out


def term_blocked(pid: int, proc: str = "/proc") -> str | None:
    """Why `pid` cannot act on SIGTERM, or None when it can."""
    status = _masks(_read_or_none("%s/%d/status" % (proc, pid)))
    if not status:
        return None
    if status.get("SigIgn", 0) & SIGTERM_BIT:
        return "SIGTERM ignored"
    nspid = status.get("NSpid") or []
    if len(nspid) > 1 and nspid[-1] == "1" and not status.get("SigCgt", 0) & SIGTERM_BIT:
        return "PID 1 of its own PID namespace without a SIGTERM handler"
    tasks = live_tasks(pid, proc)
    if any(state == "t" for _tid, state in tasks):
        return "ptrace-stopped (traced by %s): SIGTERM cannot act until its tracer resumes it" % _tracer(status)
    if tasks:
        blocked = 0
        for tid, _state in tasks:
            masks = _masks(_read_or_none("%s/%d/task/%d/status" % (proc, pid, tid)))
            if masks.get("SigBlk", 0) & SIGTERM_BIT:
                blocked += 1
        if blocked == len(tasks):
            return "SIGTERM blocked by every thread"
    return None


def _tracer(status):
    tracer = status.get("TracerPid", "0")
    return "pid %s" % tracer if tracer not in ("", "0") else "another thread's tracer"


def job_stopped(pid: int, proc: str = "/proc") -> bool:
    """Whether `pid`'s threads are stopped by job control (state T), so SIGTERM would stay pending."""
    tasks = live_tasks(pid, proc)
    return bool(tasks) and all(state == "T" for _tid, state in tasks)
