# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Readers of /proc/PID/stat, the one parser the tests use.

`proc` is the /proc to read: "/proc", or a PID namespace's own, seen from outside as
/proc/INIT/root/proc (pidns.PidNamespace.proc), where PIDs are those of the namespace.
The command name (field 2) may hold spaces and parentheses, so fields are counted from
the last ")". Each reader returns None once the process is gone.
"""

PROC = "/proc"


def stat_fields(pid, proc=PROC):
    """Fields 3... of /proc/PID/stat (state, ppid, ...; index 0 is the state), or None."""
    try:
        with open("%s/%d/stat" % (proc, int(pid)), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2:].decode("ascii", "replace").split()


def state(pid, proc=PROC):
    """State letter ('R', 'S', 'Z' for a zombie, ...), or None when the PID is gone."""
    fields = stat_fields(pid, proc)
    return fields[0] if fields else None


def ppid(pid, proc=PROC):
    fields = stat_fields(pid, proc)
    return int(fields[1]) if fields else None


def starttime(pid, proc=PROC):
    """Start time in clock ticks since boot (field 22): with the PID, names one process."""
    fields = stat_fields(pid, proc)
    return int(fields[19]) if fields else None


def alive(pid, proc=PROC):
    """True while PID runs and is not a zombie."""
    return state(pid, proc) not in (None, "Z")


def zombie(pid, proc=PROC):
    return state(pid, proc) == "Z"
