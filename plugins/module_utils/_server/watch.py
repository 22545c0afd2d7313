# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Is the server process still alive? By PID, pidfile or systemd unit.

Reads /proc directly (Linux, no psutil needed on the host). A PID is tied to its
start time, so a reused PID is not mistaken for the server. A zombie counts as dead
and still tells its exit status (/proc/PID/stat field 52).
"""

from __future__ import annotations

import os
import subprocess
from typing import Any


class ProcState:
    """alive: True, False, or None (not known yet, e.g. the pidfile is not written yet)."""

    def __init__(self, alive: bool | None, pid: int | None = None, exit_code: int | None = None, detail: str = "",
                 start_time: int | None = None) -> None:
        self.alive = alive
        self.pid = pid
        self.exit_code = exit_code
        self.detail = detail
        self.start_time = start_time  # of the live process under `pid`: its identity (clock ticks after boot)

    def as_dict(self) -> dict:
        return {"alive": self.alive, "pid": self.pid, "exit_code": self.exit_code, "detail": self.detail,
                "start_time": self.start_time}


def decode_wait_status(status: int) -> int:
    """Exit code, or minus the signal number, from a raw wait status."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return None


def read_proc_stat(pid: int, proc: str = "/proc") -> tuple | None:
    """(state, start_time, exit_code or None) of a PID, or None if there is no such process."""
    try:
        with open("%s/%d/stat" % (proc, pid)) as handle:
            text = handle.read()
    except OSError:
        return None
    # comm (field 2) is in parentheses and may hold spaces: split after the last ')'.
    rest = text[text.rindex(")") + 2:].split()
    state, start_time = rest[0], int(rest[19])
    exit_code = None
    if len(rest) > 49 and state in ("Z", "X"):
        exit_code = decode_wait_status(int(rest[49]))
    return state, start_time, exit_code


class PidWatch:
    """Watches one PID, or the PID a pidfile names (re-read each poll: a relaunch may rewrite it).

    The first poll ties the PID to its start time, unless `identity` ({"pid", "start_time"}, from
    an earlier watch of the same wait: the sliced wait's first slice) already says which process
    that PID must be; then a PID reused before this watch began is caught at its first poll.
    """

    def __init__(self, pid: int | None = None, pidfile: str | None = None, proc: str = "/proc",
                 identity: dict | None = None) -> None:
        self.pid = pid
        self.pidfile = pidfile
        self.proc = proc
        self._start_time = None
        self._known = (identity["pid"], identity["start_time"]) if identity and identity.get("start_time") is not None \
            else None

    def _pid_from_file(self):
        try:
            with open(self.pidfile) as handle:
                text = handle.read().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def poll(self) -> ProcState:
        if self.pidfile:
            named = self._pid_from_file()
            if named is None and self.pid is None:
                return ProcState(None, detail="pidfile %s not written yet" % self.pidfile)
            if named is not None and named != self.pid:
                self.pid, self._start_time = named, None
        if self._start_time is None and self._known and self._known[0] == self.pid:
            self._start_time = self._known[1]
        stat = read_proc_stat(self.pid, self.proc)
        if stat is None:
            return ProcState(False, self.pid, detail="process %d is gone" % self.pid)
        state, start_time, exit_code = stat
        if self._start_time is None:
            self._start_time = start_time
        elif start_time != self._start_time:
            return ProcState(False, self.pid, detail="process %d is gone (PID reused: started at tick %d, not %d)"
                             % (self.pid, start_time, self._start_time))
        if state in ("Z", "X"):
            return ProcState(False, self.pid, exit_code, "process %d has exited (zombie)" % self.pid, start_time)
        return ProcState(True, self.pid, start_time=start_time)


def parse_systemctl_show(text: str) -> dict:
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


class SystemdWatch:
    """Watches a unit through `systemctl show` (ActiveState, MainPID, exit status)."""

    PROPS = ("MainPID", "ActiveState", "SubState", "ExecMainCode", "ExecMainStatus")

    def __init__(self, unit: str, systemctl: str = "systemctl", runner: Any = None) -> None:
        self.unit = unit
        self.command = [systemctl, "show", unit] + ["--property=%s" % p for p in self.PROPS]
        self.runner = runner or self._run

    @staticmethod
    def _run(command):
        # No AnsibleModule here (the watcher also runs outside a module), and run_command has no timeout.
        proc = subprocess.run(command, capture_output=True,  # pylint: disable=ansible-bad-function
                              text=True, timeout=5, check=False)
        if proc.returncode != 0:
            raise OSError("%s failed: %s" % (" ".join(command), proc.stderr.strip()))
        return proc.stdout

    def poll(self) -> ProcState:
        values = parse_systemctl_show(self.runner(self.command))
        active, sub = values.get("ActiveState", ""), values.get("SubState", "")
        pid = int(values.get("MainPID") or 0) or None
        # auto-restart: the main process died and systemd waits to start it again.
        if active in ("failed", "inactive") or sub == "auto-restart":
            exit_code = None
            status, how = values.get("ExecMainStatus", ""), values.get("ExecMainCode", "")
            if status.isdigit():
                # ExecMainCode 1 = exited (status is the code); 2/3 = killed/dumped (status is the signal).
                if how == "1":
                    exit_code = int(status)
                elif how in ("2", "3"):
                    exit_code = -int(status)
            return ProcState(False, pid, exit_code, "unit %s is %s/%s" % (self.unit, active, sub))
        return ProcState(True, pid, detail="unit %s is %s/%s" % (self.unit, active, sub))


class NoWatch:
    def poll(self) -> ProcState:
        return ProcState(None)


def make_watch(pid: int | None = None, pidfile: Any = None, systemd_unit: str | None = None, systemctl: str = "systemctl",
               identity: dict | None = None) -> NoWatch | PidWatch | SystemdWatch:
    if systemd_unit:
        return SystemdWatch(systemd_unit, systemctl)
    if pid or pidfile:
        return PidWatch(pid=pid, pidfile=pidfile, identity=identity)
    return NoWatch()
