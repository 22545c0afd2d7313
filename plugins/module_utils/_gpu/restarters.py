# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who could bring a released process back: its nearest ancestor that survives the release.

A process can only come back if something that outlives the release starts it
again: its parent or an ancestor (a shell loop, supervisord, runit, s6), or the
init system (a systemd unit with Restart=). A process whose parent and every
ancestor up to init were released in the same run, under an init that does not
restart it, has nobody left to restart it: its respawn watch is skipped.

A surviving ancestor is a restarter when what it runs restarts by design, read
from what it is, not from its title:

- a shell (by the executable) whose program (its -c string, or the script file
  it runs) has a `while` or `until` loop: `while true; do python3 -m
  sglang.launch_server ...; sleep 1; done` brings the server back after its
  pause, long after any watch window;
- supervisord, runit's runsv, s6-supervise, daemontools' supervise;
- PID 1 running systemd, for a process in a .service unit whose Restart= is not
  `no` (systemctl show).
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs

SHELLS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"))
SUPERVISORS = {"supervisord": "supervisord", "runsv": "runit (runsv)", "s6-supervise": "s6 (s6-supervise)",
               "supervise": "daemontools (supervise)"}
# `while`/`until` in command position: at the start of a line or after ; & | ( { or do/then/else.
LOOP = re.compile(r"(?:^|[;&|({]|\b(?:do|then|else)\s)[ \t]*(while|until)\s", re.MULTILINE)
SCRIPT_LIMIT = 65536  # bytes of a shell script read to look for a loop
SYSTEMCTL_TIMEOUT = 2.0


def _base(path):
    if not path:
        return ""
    if path.endswith(" (deleted)"):
        path = path[:-len(" (deleted)")]
    return os.path.basename(path.split(" ")[0])


def _shell_program(info):
    """The shell's program text: its -c string, or the head of the script file it runs."""
    args = info.argv[1:]
    for i, arg in enumerate(args):
        if arg == "-c" or (arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]):
            return args[i + 1] if i + 1 < len(args) else ""
        if not arg.startswith("-"):
            path = arg if arg.startswith("/") else "%s/%d/cwd/%s" % (info.proc_root, info.pid, arg)
            return bounded_fs.read_head(path, SCRIPT_LIMIT) or ""
    return ""


def service_unit(pid: int, proc_root: str = "/proc") -> str | None:
    """The systemd .service unit `pid` runs in (from /proc/PID/cgroup), or None."""
    try:
        with open("%s/%d/cgroup" % (proc_root, pid)) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        for part in reversed(line.rsplit(":", 1)[-1].split("/")):
            if part.endswith(".service"):
                return part
    return None


def _unit_restart(unit):
    try:
        out = subprocess.run(["systemctl", "show", "-p", "Restart", "--value", unit], capture_output=True,  # pylint: disable=ansible-bad-function
                             text=True, timeout=SYSTEMCTL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = out.stdout.strip()
    return value if out.returncode == 0 and value else None


def restarter_kind(ancestor: Any, unit: str | None) -> str | None:
    """What makes `ancestor` (the nearest survivor above a released process) restart it, or None.

    `unit`: the systemd .service unit the released process ran in (read before it ended).
    """
    name = _base(ancestor.exe) or _base(ancestor.argv[0] if ancestor.argv else "")
    if name in SUPERVISORS:
        return SUPERVISORS[name]
    script = [_base(a) for a in ancestor.argv[1:3]]
    if name.startswith("python") and "supervisord" in script:
        return SUPERVISORS["supervisord"]
    if name in SHELLS:
        program = _shell_program(ancestor)
        if LOOP.search(program):
            return "a shell running a loop (%s)" % LOOP.search(program).group(1)
        return None
    if ancestor.pid == 1 and name == "systemd" and unit:
        restart = _unit_restart(unit)
        if restart and restart != "no":
            return "systemd unit %s with Restart=%s" % (unit, restart)
    return None


def ancestry(table: dict, pid: int) -> list:
    """The ProcInfo of each ancestor of `pid` in `table`, parent first, up to the namespace's init."""
    chain, seen = [], set()
    info = table.get(pid)
    while info is not None and info.ppid and info.ppid not in seen:
        seen.add(info.ppid)
        info = table.get(info.ppid)
        if info is not None:
            chain.append(info)
    return chain
