# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Signals on real processes this test starts: escalation, reused PIDs, waiting on exit (every
such case runs twice: with pidfds, and with the psutil fallback used on old kernels); targets
that resist: SIGTERM ignored (SIGKILL at once), every target read before the first signal goes
out, children before their parent, targets killed at once held still first. The end-to-end
cases: tests/integration/test_release_promises.py.
"""

from __future__ import annotations

import time

import psutil
import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import signals as sig
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
from tests.support.polling import poll
from tests.support.procfs import state as proc_state

OBEY = "import sys; print('ready', flush=True); sys.stdin.read()"
# Handles SIGTERM and lives on (a SIG_IGN process gets SIGKILL at once: CODES below).
SURVIVE_TERM = ("import signal, sys; signal.signal(signal.SIGTERM, lambda *a: None); "
                "print('ready', flush=True); sys.stdin.read()")
ECHO = "import sys\nprint('ready', flush=True)\nfor line in sys.stdin:\n    print(line.strip(), flush=True)"
EXIT_SOON = "import sys, time; print('ready', flush=True); time.sleep(0.3)"
READY = "print('ready', flush=True); sys.stdin.read()"
CODES = {
    "default": "import sys; " + READY,
    "ignored": "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + READY,
    "caught": "import signal, sys; signal.signal(signal.SIGTERM, lambda *a: None); " + READY,
}


@pytest.fixture(params=["pidfd", "psutil"])
def mode(request, monkeypatch):
    if request.param == "pidfd" and not sig.HAS_PIDFD:
        pytest.skip("no pidfd support here")
    if request.param == "psutil":
        monkeypatch.setattr(sig, "HAS_PIDFD", False)
    return request.param


@pytest.fixture
def start(own_procs):
    def _start(code):
        proc = own_procs.python(code)
        assert proc.stdout.readline().strip() == "ready"
        return proc
    return _start


def info_of(pid, create_time_shift=0.0):
    p = psutil.Process(pid)
    return ProcInfo(pid, p.ppid(), p.create_time() + create_time_shift, p.username(),
                    p.cmdline(), p.name(), p.status())


def test_term_then_kill_escalation(mode, start):
    stubborn = start(SURVIVE_TERM)
    obedient = start(OBEY)
    targets = [sig.Target(info_of(stubborn.pid), "pattern"), sig.Target(info_of(obedient.pid), "descendant")]
    assert [t.gone for t in targets] == [False, False]
    assert (targets[0]._pidfd is not None) is (mode == "pidfd")
    t0 = time.monotonic()
    stuck = sig.release(targets, term_timeout=0.4, deadline=t0 + 20)
    assert stuck == []
    assert targets[0].signals == ["SIGTERM", "SIGKILL"]
    assert targets[1].signals == ["SIGTERM"]
    assert stubborn.wait(timeout=10) == -9
    assert obedient.wait(timeout=10) == -15
    stubborn_rec, obedient_rec = (t.result() for t in targets)
    assert stubborn_rec["gone_after"] >= 0.4
    assert obedient_rec["gone_after"] < 0.4  # gone well before the escalation
    assert stubborn_rec["reason"] == "pattern" and stubborn_rec["pid"] == stubborn.pid
    assert obedient_rec["signals"] == ["SIGTERM"]


def test_term_timeout_zero_sends_only_kill(mode, start):
    proc = start(OBEY)
    target = sig.Target(info_of(proc.pid), "pattern")
    assert sig.release([target], term_timeout=0, deadline=time.monotonic() + 20) == []
    assert target.signals == ["SIGKILL"]
    assert proc.wait(timeout=10) == -9


def test_obedient_processes_do_not_wait_for_term_timeout(mode, start):
    procs = [start(OBEY) for unused in range(3)]
    targets = [sig.Target(info_of(p.pid), "pattern") for p in procs]
    t0 = time.monotonic()
    assert sig.release(targets, term_timeout=30, deadline=t0 + 60) == []
    assert time.monotonic() - t0 < 10  # returned on exit, not at term_timeout (30 s)
    assert all(t.signals == ["SIGTERM"] for t in targets)


@pytest.mark.parametrize("shift", [-7.5, +3.0, 0.05])
def test_reused_pid_is_never_signalled(mode, start, shift):
    """A snapshot entry whose start time differs from the live process: another process now."""
    proc = start(ECHO)
    target = sig.Target(info_of(proc.pid, create_time_shift=shift), "pattern")
    assert target.gone is True
    assert target._pidfd is None
    assert sig.release([target], term_timeout=0, deadline=time.monotonic() + 5) == []
    target.send(9, time.monotonic())
    assert target.signals == []
    # still alive and answering (a signal sent would have been delivered by now)
    proc.stdin.write("ping\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "ping"
    assert proc.poll() is None


def test_matching_start_time_within_tolerance_is_pinned(mode, start):
    proc = start(OBEY)
    target = sig.Target(info_of(proc.pid, create_time_shift=0.005), "pattern")
    assert target.gone is False
    sig.close_all([target])


def test_wait_gone_returns_when_processes_exit_zombie_counts(mode, start):
    procs = [start(EXIT_SOON) for unused in range(2)]
    targets = [sig.Target(info_of(p.pid), "pattern") for p in procs]
    t0 = time.monotonic()
    alive = sig.wait_gone(targets, deadline=t0 + 30)
    assert alive == []
    assert time.monotonic() - t0 < 10  # woke at the exits (0.3 s), not at the 30 s deadline
    # nobody reaped them: they are zombies, and that counts as gone
    assert [proc_state(p.pid) for p in procs] == ["Z", "Z"]
    assert all(t.gone and t.gone_at is not None for t in targets)


def test_wait_gone_returns_the_living_at_the_deadline(mode, start):
    proc = start(OBEY)
    target = sig.Target(info_of(proc.pid), "pattern")
    t0 = time.monotonic()
    assert sig.wait_gone([target], deadline=t0 + 0.2) == [target]
    assert time.monotonic() - t0 >= 0.2
    assert proc.poll() is None and target.state() in ("sleeping", "running")
    sig.close_all([target])


def test_zombie_at_pin_time_is_already_gone(mode, start):
    proc = start(OBEY)
    info = info_of(proc.pid)  # the snapshot saw it alive
    proc.stdin.close()  # it exits at EOF; nobody reaps it
    poll(lambda: proc_state(proc.pid) == "Z", 10, 0.01, what="child to become a zombie")
    target = sig.Target(info, "pattern")
    assert target.gone is True
    assert sig.release([target], term_timeout=0, deadline=time.monotonic() + 5) == []
    assert target.signals == []


def test_reaped_process_is_gone_and_send_is_a_no_op(mode, start):
    proc = start(OBEY)
    info = info_of(proc.pid)
    proc.kill()
    proc.wait(timeout=10)
    target = sig.Target(info, "pattern")
    assert target.gone is True and target.state() == "gone"
    target.send(15, time.monotonic())
    assert target.signals == [] and target.result()["gone_after"] is None


def test_process_exiting_after_pin_is_marked_gone_on_send(mode, start):
    proc = start(OBEY)
    target = sig.Target(info_of(proc.pid), "pattern")
    proc.kill()
    proc.wait(timeout=10)  # reaped: ESRCH on the next signal
    target.send(15, 123.0)
    assert target.gone is True and target.signals == []
    assert target.refresh(124.0) is True


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
