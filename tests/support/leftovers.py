# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Processes a test session leaves behind: what tests/conftest.py fails the session on.

Two places are looked at: the descendants of the pytest process, and every process in a PID
namespace the tests created (pidns.PidNamespace and the simulated fleets of
tests/integration/_fleet_fixtures.py register each one and hold it open with a file descriptor,
so its inode cannot be reused by someone else's namespace meanwhile). The
second place finds what the first misses: a namespace's tini whose unshare is gone, or that
cannot finish exiting because a process outside the namespace (a stopped nsenter) never reaps
its child. Zombies are not counted: they run nothing and hold nothing but a table entry; the
session's own zombie children are reaped here so that none outlives pytest.
"""
import os

from tests.support import procfs
from tests.support.polling import holds_within

# "pid:[INODE]" of each PID namespace the tests created -> an open descriptor of it.
NAMESPACES = {}


def register_namespace(init_pid):
    """Record the PID namespace of `init_pid` (its PID 1) as one the tests created."""
    path = "/proc/%d/ns/pid" % init_pid
    NAMESPACES.setdefault(os.readlink(path), os.open(path, os.O_RDONLY))


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def descendants(pid):
    out, todo = [], _children(pid)
    while todo:
        child = todo.pop()
        out.append(child)
        todo += _children(child)
    return out


def in_namespaces(names):
    """PIDs (as seen from here) of the processes in the PID namespaces `names`."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink("/proc/%s/ns/pid" % entry) in names:
                    out.append(int(entry))
            except OSError:
                pass  # gone meanwhile, or a kernel thread
    return out


def describe(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            argv = handle.read().rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        argv = ""
    if not argv:
        try:
            with open("/proc/%d/comm" % pid) as handle:
                argv = "[%s]" % handle.read().strip()
        except OSError:
            argv = "[?]"
    return "pid %d (state %s, ppid %s): %s" % (pid, procfs.state(pid), procfs.ppid(pid), argv)


def reap_zombie_children(pid):
    """Reap the zombie children of this process (`pid` is os.getpid())."""
    for child in _children(pid):
        if procfs.zombie(child):
            try:
                os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                pass


def running(root_pid):
    """Sorted PIDs of the processes left: descendants of root_pid and members of the
    namespaces the tests created, zombies left out."""
    pids = set(descendants(root_pid)) | set(in_namespaces(set(NAMESPACES)))
    return sorted(p for p in pids if procfs.alive(p))


def left_behind(root_pid, grace=5.0):
    """Descriptions of what is still running after up to `grace` seconds (a process just
    SIGKILLed needs a moment to go); an empty list when nothing is."""
    reap_zombie_children(root_pid)
    if holds_within(lambda: not running(root_pid), grace, 0.05):
        return []
    return [describe(pid) for pid in running(root_pid)]
