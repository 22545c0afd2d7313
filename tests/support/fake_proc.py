# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A hand-made /proc in a directory: a process's stat and cmdline, as the process table reads them."""

import os

# Fields after comm up to starttime (field 22), numbered as in proc(5): state ppid pgrp session
# tty tpgid flags, ten counters, priority nice num_threads itrealvalue starttime.
STAT = "%d (%s) S %d %d %d 0 -1 %d 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0"
ORDINARY = 0x400000  # PF_FORKNOEXEC: a flag word without PF_KTHREAD


def write(root, pid, ppid, cmdline=b"", comm="p", flags=ORDINARY, start=500, session=None):
    """PID's /proc/PID/stat and cmdline under ROOT (a directory), replacing what was there.

    The process leads its own process group, and its own session unless SESSION names one."""
    base = os.path.join(str(root), str(pid))
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(base, "stat"), "w") as handle:
        handle.write(STAT % (pid, comm, ppid, pid, pid if session is None else session, flags, start))
    with open(os.path.join(base, "cmdline"), "wb") as handle:
        handle.write(cmdline)


def record_opens(monkeypatch, module_os, root):
    """The paths under ROOT that os.open opens from now on (relative to ROOT), in order."""
    opened = []
    real_open = os.open

    def recording(path, *args, **kwargs):
        opened.append(os.path.relpath(path, str(root)))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(module_os, "open", recording)
    return opened
