# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which processes gpu_release must never signal, and why.

Protection goes by what a process is, never by what it calls itself: a title
(setproctitle, argv[0]) or a comm (prctl PR_SET_NAME) can be set by anyone.

- a GPU daemon is a process that runs a daemon's executable (the base name of
  /proc/PID/exe), from a file owned by root and writable by root only, as root
  or a system user (UID below 1000); where /proc/PID/exe cannot be read (a
  non-root caller looking at a root process), its argv[0] stands in, still only
  for root or system users;
- a kernel thread carries PF_KTHREAD in /proc/PID/stat (PPID 2 proves nothing:
  in a PID namespace PID 2 is an ordinary process, the launcher under tini);
- Ansible's own processes (_ansible_procs), the module's ancestors and its own
  helpers, PID 1, and what the `protect` regexes match;
- a terminal multiplexer's server or client (tmux, screen, ...: MULTIPLEXERS) by
  its executable: its argv may carry the server's command line, its sessions
  are not all the server's;
- the router in front of the fleet (sglang-router: ROUTERS) by its executable: it
  titles itself `sglang::router`, which SGLang's own kill pattern `sglang::` matches,
  and it holds no GPU;
- a copy of an ancestor (ansible's fork for another host): the same command line,
  but only as a child of an ancestor other than init, run by the same user.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.ansible_runs import ansible_pids
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import Subtree, ancestors

# GPU system daemons, by the base name of their executable.
# Killing them breaks monitoring, MPS clients, the fabric or the desktop.
DAEMONS = ("nvidia-persistenced", "nv-hostengine", "dcgm-exporter", "dcgmi", "nvidia-fabricmanager",
           "nv-fabricmanager", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "Xorg", "Xwayland",
           "X", "nvidia-device-plugin", "k8s-device-plugin", "gpu-feature-discovery")
# Terminal multiplexers and session managers, by the base name of their executable.
# Their server keeps the argv of the command that started it (`tmux new -d -s srv
# 'python3 -m sglang.launch_server ...'`), so it matches the server's pattern; it is
# not the server: ending it ends every session it holds. The matching session's own
# processes match by themselves and are released; the multiplexer is spared.
MULTIPLEXERS = ("tmux", "screen", "zellij", "abduco", "dtach")
# The router's executables (sglang-router 0.3.2's Rust binaries), by base name: a router
# started on a GPU host with them is never released (a router run as `python -m` is python).
ROUTERS = ("smg", "sglang-router")
COMM_LEN = 15  # the kernel cuts /proc/PID/comm to 15 characters
SYSTEM_UID_MAX = 999  # login.defs SYS_UID_MAX: daemons' own accounts (nvidia-persistenced, nvidia-dcgm)


def is_daemon_name(name: str) -> bool:
    return name in DAEMONS


def program_names(info: Any) -> Any:
    """Names a process shows (comm and argv[0]): for reports, never for protection."""
    names = {info.name}
    if info.argv:
        names.add(os.path.basename(info.argv[0].split(" ")[0]))
    return {n for n in names if n}


def system_user(uid: int) -> bool:
    return uid is not None and 0 <= uid <= SYSTEM_UID_MAX


def exe_file_trusted(info: Any) -> Any:
    """The executable behind /proc/PID/exe is root's and writable by root only."""
    try:
        # Follows to the executable's file system, which may be a hung mount: bounded.
        st = bounded_fs.stat("%s/%d/exe" % (info.proc_root, info.pid))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022


def daemon_identity(info: Any, exe_trusted: Any = exe_file_trusted) -> bool:
    """True when `info` is a GPU daemon by what it runs and who runs it."""
    if not system_user(info.uid):
        return False
    exe = info.exe
    if exe is not None:
        name = os.path.basename(exe[:-len(" (deleted)")] if exe.endswith(" (deleted)") else exe)
        return is_daemon_name(name) and exe_trusted(info)
    # The executable cannot be read (not ours to inspect): argv[0] of a root/system process.
    return bool(info.argv) and is_daemon_name(os.path.basename(info.argv[0].split(" ")[0]))


def _trusted_exe_in(info: Any, names: tuple, exe_trusted: Any) -> bool:
    """`info` runs an executable of one of NAMES (by base name) from root's file, whoever runs it."""
    exe = info.exe
    if exe is None:
        return False
    name = os.path.basename(exe[:-len(" (deleted)")] if exe.endswith(" (deleted)") else exe)
    return name in names and exe_trusted(info)


def multiplexer_identity(info: Any, exe_trusted: Any = exe_file_trusted) -> bool:
    """True when `info` runs a terminal multiplexer's executable (root's file, whoever runs it)."""
    return _trusted_exe_in(info, MULTIPLEXERS, exe_trusted)


def router_identity(info: Any, exe_trusted: Any = exe_file_trusted) -> bool:
    """True when `info` runs the router's executable (root's file, whoever runs it)."""
    return _trusted_exe_in(info, ROUTERS, exe_trusted)


def compile_protect(patterns: list | None) -> list:
    out = []
    for raw in patterns or []:
        if raw is None or str(raw).strip() == "":
            raise InvalidInput("protect: an empty pattern protects nothing useful; remove it or give a regex")
        try:
            out.append(re.compile(str(raw)))
        except re.error as exc:
            raise InvalidInput("protect: %r is not a valid regular expression (%s)" % (raw, exc))
    return out


class Protection:
    """Decides, for a snapshot, which PIDs are protected and for what reason."""

    def __init__(self, table: dict, own_pid: int, extra_regexes: list | tuple = (), exe_trusted: Any = exe_file_trusted) -> None:
        self.table = table
        self.own_pid = own_pid
        self.extra = list(extra_regexes)
        self.exe_trusted = exe_trusted
        self.lineage = set(ancestors(table, own_pid)) | {own_pid}
        # Our own helpers (the bounded NVML child) hold the device files too. A set asked one
        # PID at a time: on a cmdline-only table it reads only the asked PIDs' ancestry.
        self.own_tree = Subtree(table, own_pid)
        # Copies of a command that runs us (ansible's forks for other hosts carry the
        # same command line as the ansible process above us): {cmdline: owners' UIDs}.
        # The command line alone proves nothing (anyone may title a process
        # `/usr/bin/python3`, as the module runs under pipelining): a copy must also
        # be a child of one of our ancestors other than init, and run as that copy's owner.
        self.lineage_cmdlines = {}
        for pid in self.lineage:
            if pid in table and table[pid].argv:
                self.lineage_cmdlines.setdefault(table[pid].cmdline, set()).add(table[pid].uid)
        self._ansible = None  # computed on first need: a no-op never needs it
        self._cache = {}

    @property
    def ansible(self) -> set:
        if self._ansible is None:
            self._ansible = ansible_pids(self.table)
        return self._ansible

    def reason(self, pid: int) -> str | None:
        """Why `pid` is protected, or None."""
        if pid not in self._cache:
            self._cache[pid] = self._reason(pid)
        return self._cache[pid]

    def _reason(self, pid):
        if pid in self.own_tree:
            return "self"
        if pid in self.lineage:
            return "ancestor"
        if pid == 1:
            return "init"
        info = self.table.get(pid)
        if info is None:
            return None
        if info.is_kernel_thread:
            return "kernel thread"
        if pid in self.ansible:
            return "ansible"
        if info.argv and info.ppid in self.lineage and info.ppid != 1 \
                and info.uid in self.lineage_cmdlines.get(info.cmdline, ()):
            return "copy of an ancestor"
        if any(r.search(info.cmdline) for r in self.extra):
            return "protect pattern"
        if daemon_identity(info, self.exe_trusted):
            return "gpu daemon"
        if multiplexer_identity(info, self.exe_trusted):
            return "terminal multiplexer"
        if router_identity(info, self.exe_trusted):
            return "router"
        return None
