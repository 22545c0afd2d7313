# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Signals on real processes this test starts: escalation, reused PIDs, waiting on exit.

Every case runs twice: with pidfds, and with the psutil fallback used on old kernels.
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
# Handles SIGTERM and lives on (a SIG_IGN process gets SIGKILL at once: test_signal_targets.py).
SURVIVE_TERM = ("import signal, sys; signal.signal(signal.SIGTERM, lambda *a: None); "
                "print('ready', flush=True); sys.stdin.read()")
ECHO = "import sys\nprint('ready', flush=True)\nfor line in sys.stdin:\n    print(line.strip(), flush=True)"
EXIT_SOON = "import sys, time; print('ready', flush=True); time.sleep(0.3)"


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
