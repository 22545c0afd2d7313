# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Signal targets that resist, on real processes this test starts: SIGTERM ignored or blocked
(SIGKILL at once), a thread group whose leader exited (alive, named, signalled), and every target
read before the first signal goes out. The end-to-end cases: tests/integration/test_release_promises.py.
"""

from __future__ import annotations

import re
import time

import psutil
import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import signals as sig
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import threads as _threads
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
from tests.support.polling import poll
from tests.support.procfs import state as proc_state

READY = "print('ready', flush=True); sys.stdin.read()"
CODES = {
    "default": "import sys; " + READY,
    "ignored": "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + READY,
    "blocked": "import signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM]); " + READY,
    "caught": "import signal, sys; signal.signal(signal.SIGTERM, lambda *a: None); " + READY,
}
LEADER_EXIT = ("import ctypes, sys, threading, time\n"
               "threading.Thread(target=lambda: time.sleep(3600)).start()\n"
               "print('ready', flush=True)\n"
               "ctypes.CDLL(None).pthread_exit(None)\n")


def info_of(pid):
    p = psutil.Process(pid)
    return ProcInfo(pid, p.ppid(), p.create_time(), p.username(), p.cmdline(), p.name(), p.status())


@pytest.mark.parametrize("kind, why", [("default", None), ("caught", None), ("ignored", "SIGTERM ignored"),
                                       ("blocked", "SIGTERM blocked by every thread")])
def test_term_blocked_reads_proc_status(own_procs, kind, why):
    proc = own_procs.python(CODES[kind])
    assert proc.stdout.readline().strip() == "ready"
    assert _threads.term_blocked(proc.pid) == why


def test_sigterm_ignored_gets_sigkill_at_once(own_procs):
    proc = own_procs.python(CODES["ignored"])
    assert proc.stdout.readline().strip() == "ready"
    target = sig.Target(info_of(proc.pid), "pattern")
    t0 = time.monotonic()
    assert sig.release([target], term_timeout=10, deadline=t0 + 20) == []
    assert time.monotonic() - t0 < 2.0  # not term_timeout
    assert target.signals == ["SIGKILL"] and target.result()["sigkill_at_once"] == "SIGTERM ignored"


def test_every_target_is_read_before_the_first_signal(own_procs, monkeypatch):
    # A parent's SIGTERM handler that ends its children must not beat our signal to them:
    # reading /proc between two signals would leave that window open on a loaded host.
    procs = [own_procs.python(CODES[kind]) for kind in ("default", "ignored", "caught")]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    events = []
    real_term_blocked, real_send = sig.term_blocked, sig.Target.send
    monkeypatch.setattr(sig, "term_blocked", lambda pid: events.append(("read", pid)) or real_term_blocked(pid))
    monkeypatch.setattr(sig.Target, "send", lambda self, s, now: events.append(("signal", self.pid)) or real_send(self, s, now))
    targets = [sig.Target(info_of(proc.pid), "pattern") for proc in procs]
    t0 = time.monotonic()
    assert sig.release(targets, term_timeout=0.5, deadline=t0 + 20) == []
    kinds = [kind for kind, _pid in events]
    assert kinds[:3] == ["read"] * 3 and "read" not in kinds[3:], events
    assert [t.signals[0] for t in targets] == ["SIGTERM", "SIGKILL", "SIGTERM"]


# A parent that ignores SIGTERM, with children that ignore it too and die with it (PR_SET_PDEATHSIG),
# as a hung SGLang server and its schedulers: everyone gets SIGKILL at once.
PDEATH_CHILD = ("import ctypes, signal, sys; ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0); "
                "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); sys.stdin.read()")
PDEATH_PARENT = ("import signal, subprocess, sys\n"
                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                 "kids = [subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdin=subprocess.PIPE,\n"
                 "                         stdout=subprocess.PIPE, text=True) for _ in range(4)]\n"
                 "assert all(k.stdout.readline().strip() == 'ready' for k in kids)\n"
                 "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
                 "sys.stdin.read()\n")


def test_children_get_our_signal_before_their_parent(own_procs, monkeypatch):
    # Signalled parent first, a child dying with it may be reaped before its own signal goes out,
    # and the result would leave it out of what was killed.
    parent = own_procs.python(PDEATH_PARENT, PDEATH_CHILD)
    kids = [int(pid) for pid in parent.stdout.readline().split()]
    sent = []
    real_send = sig.Target.send
    monkeypatch.setattr(sig.Target, "send", lambda self, s, now: sent.append(self.pid) or real_send(self, s, now))
    targets = [sig.Target(info_of(pid), "pattern") for pid in [parent.pid] + kids]
    assert sig.release(targets, term_timeout=10, deadline=time.monotonic() + 20) == []
    assert sent[-1] == parent.pid and sorted(sent[:-1]) == sorted(kids)
    assert [t.signals for t in targets] == [["SIGKILL"]] * 5
    assert parent.wait(timeout=10) == -9


def test_leaves_first_orders_by_depth_in_the_target_set():
    def target(pid, ppid):
        t = sig.Target.__new__(sig.Target)
        t.info = ProcInfo(pid, ppid, 0.0, "u", ["x"], "x", "sleeping")
        return t
    # 10 -> 11 -> 12, 10 -> 13; 20 alone (its parent 1 is not a target); a ppid loop stays finite.
    given = [target(10, 1), target(20, 1), target(11, 10), target(13, 10), target(12, 11),
             target(30, 31), target(31, 30)]
    assert [t.pid for t in sig.leaves_first(given)] == [12, 11, 13, 30, 31, 10, 20]


@pytest.fixture
def leader_exited(own_procs):
    proc = own_procs.python(LEADER_EXIT, "gf-probe-arg")
    assert proc.stdout.readline().strip() == "ready"
    poll(lambda: proc_state(proc.pid) == "Z", 10, 0.01, what="main thread to exit")
    return proc


def test_exited_leader_counts_as_alive_named_and_signalled(leader_exited):
    pid = leader_exited.pid
    assert _threads.leader_exited(pid) and len(_threads.live_tasks(pid)) == 1
    assert _threads.group_cmdline(pid).endswith("gf-probe-arg")
    # The live thread sleeps in a loop; on a loaded machine it may be caught running.
    live = re.compile(r"(sleeping|running) \(main thread exited, 1 thread live\)")
    assert live.fullmatch(_threads.group_state(pid)), _threads.group_state(pid)
    info = ProcInfo(pid, 1, psutil.Process(pid).create_time(), "root", [], "python", "zombie")
    target = sig.Target(info, "descendant")
    assert target.gone is False  # a zombie leader with a live thread is not gone: it is signalled
    assert live.fullmatch(target.state()), target.state()
    assert sig.release([target], term_timeout=5, deadline=time.monotonic() + 10) == []
    assert target.signals == ["SIGTERM"]
    assert target.result()["cmdline"].endswith("gf-probe-arg")
    assert leader_exited.wait(timeout=10) == -15


# The reverse: a parent that ends its other children as soon as one dies (SGLang's does, through
# its SIGQUIT from the child watchdog; here SIGCHLD), everyone ignoring SIGTERM.
SIBLING_PARENT = ("import os, signal, subprocess, sys\n"
                  "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                  "kids = [subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdin=subprocess.PIPE,\n"
                  "                         stdout=subprocess.PIPE, text=True) for _ in range(4)]\n"
                  "def end_all(*_):\n"
                  "    for k in kids:\n"
                  "        if k.poll() is None:\n"
                  "            k.kill()\n"
                  "assert all(k.stdout.readline().strip() == 'ready' for k in kids)\n"
                  "signal.signal(signal.SIGCHLD, end_all)\n"
                  "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
                  "sys.stdin.read()\n")


def test_targets_killed_at_once_are_held_still_before_the_first_sigkill(own_procs, monkeypatch):
    # Between our SIGKILL to one child and to the next, the parent could end the next one itself,
    # and the result would not name it: every such target is stopped before the first goes out.
    parent = own_procs.python(SIBLING_PARENT, CODES["ignored"])
    kids = [int(pid) for pid in parent.stdout.readline().split()]
    seen = []
    real_send = sig.Target.send

    def send(self, s, now):
        if not seen:
            seen.extend(proc_state(pid) for pid in [parent.pid] + kids)
        real_send(self, s, now)

    monkeypatch.setattr(sig.Target, "send", send)
    targets = [sig.Target(info_of(pid), "pattern") for pid in [parent.pid] + kids]
    assert sig.release(targets, term_timeout=10, deadline=time.monotonic() + 20) == []
    assert seen == ["T"] * 5, seen
    assert [t.signals for t in targets] == [["SIGKILL"]] * 5
    assert parent.wait(timeout=10) == -9
