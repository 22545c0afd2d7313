# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_gpu/respawn_watch.py on real processes this test starts: a shell loop that starts its server
again is named as the restarter, with its window from the server's own exit; a process whose
every ancestor up to init was released is not watched; when a rescan is due.
"""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import respawn_watch as rw
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.protect import Protection
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import signals as sig
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _table
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
from tests.support.polling import poll

LOOP = "while true; do sleep 600; done"


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
        return [int(p) for p in handle.read().split()]


def sleepers(pid):
    """PID's children that run `sleep` already: a forked child shows the shell's command line until
    it execs, so a child found before that would be named as a shell."""
    out = []
    for child in children(pid):
        try:
            with open("/proc/%d/cmdline" % child, "rb") as handle:
                if handle.read().split(b"\0")[0] == b"sleep":
                    out.append(child)
        except FileNotFoundError:
            continue
    return out


@pytest.fixture
def module(own_procs):
    """The module's own process: its ancestors (this test's) are no restarters."""
    return own_procs.python("import sys; sys.stdin.read()")


def release(targets):
    assert sig.release(targets, term_timeout=5, deadline=time.monotonic() + 20) == []


def test_a_shell_loop_is_named_as_the_restarter_of_what_it_starts_again(own_procs, module):
    shell = own_procs.popen(["bash", "-c", LOOP])
    server = poll(lambda: sleepers(shell.pid), 10, 0.01, "the loop to start its server")[0]
    own_procs.add(server)
    table = _table.snapshot()
    target = sig.Target(table[server], "pattern")
    watch = rw.RespawnWatch(settle=0.5)
    watch.note([target], table, Protection(table, module.pid))
    release([target])
    again = poll(lambda: [p for p in sleepers(shell.pid) if p != server], 10, 0.01, "the loop to start it again")
    own_procs.add(again[0])
    watch.arm(time.monotonic())
    assert [e.target.pid for e in watch.watched] == [server] and watch.skipped == []
    assert watch.until == pytest.approx(target.gone_at + 0.5)
    ((survivor, kind, entries),) = watch.live_restarters()
    assert (survivor.pid, kind, [e.target.pid for e in entries]) == (shell.pid, "a shell running a loop (while)", [server])
    message = rw.restarter_message(watch.live_restarters())
    assert ("pid %d (bash -c %s, user " % (shell.pid, LOOP)) in message
    assert "is a shell running a loop (while) and started pid %d (sleep 600)" % server in message
    watch.scanned(watch.until)
    (watched,) = watch.report()["watched"]
    assert watched == {"pid": server, "cmdline": "sleep 600", "parent_pid": shell.pid, "watched_s": 0.5,
                       "restarter": "a shell running a loop (while)"}


def test_a_released_parent_is_no_restarter_and_its_ended_restarter_is_not_live(own_procs, module):
    shell = own_procs.popen(["bash", "-c", LOOP])
    server = poll(lambda: sleepers(shell.pid), 10, 0.01, "the loop to start its server")[0]
    own_procs.add(server)
    table = _table.snapshot()
    targets = [sig.Target(table[server], "pattern"), sig.Target(table[shell.pid], "descendant")]
    watch = rw.RespawnWatch(settle=0.2)
    watch.note(targets, table, Protection(table, module.pid))
    release(targets)
    watch.arm(time.monotonic())
    # Both watched (the nearest survivor above them is this test's process), neither restarts.
    assert sorted(e.target.pid for e in watch.watched) == sorted([server, shell.pid])
    assert all(e.kind is None for e in watch.watched) and watch.live_restarters() == []


def test_a_process_whose_ancestors_up_to_init_were_released_is_not_watched(own_procs):
    # As the snapshot shows a daemon that init adopted: its parent is PID 1, which restarts nothing.
    daemon = own_procs.python("import sys; sys.stdin.read()")
    real = _table.snapshot()
    info = real[daemon.pid]
    table = {1: real[1], daemon.pid: ProcInfo(info.pid, 1, info.create_time, info.user, info.argv, info.name, info.status)}
    target = sig.Target(table[daemon.pid], "pattern")
    watch = rw.RespawnWatch(settle=5)
    watch.note([target], table, Protection(table, os.getpid()))
    release([target])
    watch.arm(time.monotonic())
    assert watch.watched == [] and watch.until is None
    (skipped,) = watch.report()["skipped"]
    assert skipped["pid"] == daemon.pid
    assert skipped["why"] == "its parent and every ancestor up to init were released in this run"


def test_a_rescan_is_due_after_the_last_exit_then_every_poll_until_the_window_closes():
    watch = rw.RespawnWatch(settle=1.0)
    watch.last_exit, watch.until = 10.0, 11.0
    assert watch.due(10.0, 0.25)           # no scan since the exit
    watch.scanned(10.0)
    assert not watch.due(10.1, 0.25)       # within the poll interval
    assert watch.due(10.3, 0.25)           # the poll interval passed
    watch.scanned(10.9)
    assert watch.due(11.0, 0.25)           # the window's closing rescan
    watch.scanned(11.0)
    assert not watch.due(12.0, 0.25) and watch.rescans == 3
