# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which processes gpu_release must never signal, and why."""

from __future__ import annotations

import os
import re

from ._errors import InvalidInput
from ._proctable import ancestors, descendants

# GPU system daemons, matched on the program's base name (argv[0] or comm).
# Killing them breaks monitoring, MPS clients, the fabric or the desktop.
DAEMONS = ("nvidia-persistenced", "nv-hostengine", "dcgm-exporter", "dcgmi", "nvidia-fabricmanager",
           "nv-fabricmanager", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "Xorg", "Xwayland",
           "X", "nvidia-device-plugin", "k8s-device-plugin", "gpu-feature-discovery")
COMM_LEN = 15  # the kernel cuts /proc/PID/comm to 15 characters


def is_daemon_name(name):
    if name in DAEMONS:
        return True
    # A name read from comm alone (no readable cmdline) may be cut short.
    return len(name) == COMM_LEN and any(d.startswith(name) for d in DAEMONS)


def program_names(info):
    names = {info.name}
    if info.argv:
        names.add(os.path.basename(info.argv[0].split(" ")[0]))
    return {n for n in names if n}


def compile_protect(patterns):
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

    def __init__(self, table, own_pid, extra_regexes=()):
        self.table = table
        self.own_pid = own_pid
        self.extra = list(extra_regexes)
        self.lineage = set(ancestors(table, own_pid)) | {own_pid}
        # Our own helpers (the bounded NVML child) hold the device files too.
        self.own_tree = descendants(table, [own_pid]) | {own_pid}
        # Copies of a command that runs us (ansible's forks for other hosts
        # carry the same command line as the ansible process above us).
        self.lineage_cmdlines = {table[p].cmdline for p in self.lineage
                                 if p in table and table[p].argv}

    def reason(self, pid):
        """Why `pid` is protected, or None."""
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
        if any(is_daemon_name(n) for n in program_names(info)):
            return "gpu daemon"
        if info.argv and info.cmdline in self.lineage_cmdlines:
            return "copy of an ancestor"
        if any(r.search(info.cmdline) for r in self.extra):
            return "protect pattern"
        return None
