# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Signal processes seen in a snapshot, never a later process that reused a PID.

Each target is pinned with a pidfd, then its start time is checked against the
snapshot: if it matches, the pidfd refers to that very process for good, so
signals through it cannot reach a newcomer, and the pidfd turns readable the
moment the process exits (zombies included), so waiting needs no sleep.
Where pidfds are missing (old kernel or Python), psutil's checked signalling
and polling stand in.
"""

from __future__ import annotations

import os
import select
import signal
import time
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import psutil
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.threads import (
    group_cmdline,
    group_state,
    job_stopped,
    leader_exited,
    live_tasks,
    term_blocked,
)

HAS_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")
POLL_FALLBACK = 0.02
# Seconds kept before the overall deadline for a SIGKILL to take effect: sent at the
# deadline itself, it lands after the last look, and a process that dies from it a
# moment later is reported as stuck and its memory as still held.
KILL_RESERVE = 0.5


class Target:
    """One process to release, pinned to the identity seen in the snapshot."""

    def __init__(self, info: Any, reason: str) -> None:
        self.info = info
        self.reason = reason
        self.signals = []
        self.sent_at = None
        self.gone_at = None
        self.error = None
        self.denied = False
        self.sigkill_at_once = None
        self.continued = None  # why SIGCONT followed SIGTERM (a stopped process)
        self._pidfd = None
        self._proc = None
        self.gone = not self._pin()
        # Read now, while it runs: the leader's cmdline reads empty once the main thread exited.
        self.cmdline = info.cmdline or ("" if self.gone else group_cmdline(info.pid))

    def _pin(self):
        """Bind to the process; False when it is already gone or was replaced."""
        try:
            proc = psutil.Process(self.info.pid)
            if abs(proc.create_time() - self.info.create_time) > 0.01:
                return False
            if HAS_PIDFD:
                self._pidfd = os.pidfd_open(self.info.pid)
                # Check again now that the pidfd pins whatever holds the PID.
                if abs(proc.create_time() - self.info.create_time) > 0.01:
                    self.close()
                    return False
            self._proc = proc
            # A zombie leader whose other threads run on still holds what they hold.
            return proc.status() != psutil.STATUS_ZOMBIE or bool(leader_exited(self.info.pid))
        except (psutil.NoSuchProcess, ProcessLookupError):
            return False

    @property
    def pid(self) -> int:
        return self.info.pid

    def send(self, sig: Any, now: float) -> None:
        if self.gone:
            return
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, sig)
            else:
                self._proc.send_signal(sig)
        except (ProcessLookupError, psutil.NoSuchProcess):
            self._mark_gone(now)
            return
        except (PermissionError, psutil.AccessDenied) as exc:
            self.error = "not permitted to signal: %s" % exc
            self.denied = True
            return
        self.signals.append(signal.Signals(sig).name)
        if self.sent_at is None:
            self.sent_at = now

    def hold(self) -> None:
        """SIGSTOP, not recorded in `signals`: a target about to get SIGKILL is held still so it
        cannot act on another target's death (a parent that ends its other children when one dies)
        before its own SIGKILL reaches it. A failure changes nothing: the SIGKILL decides."""
        if self.gone:
            return
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signal.SIGSTOP)
            else:
                self._proc.send_signal(signal.SIGSTOP)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError, psutil.AccessDenied):
            pass

    def _mark_gone(self, now):
        if not self.gone:
            self.gone = True
            self.gone_at = now
            self.close()

    def refresh(self, now: float) -> bool:
        """Non-blocking: has the process exited (or become a zombie)?"""
        if self.gone:
            return True
        if self._pidfd is not None:
            if select.select([self._pidfd], [], [], 0)[0]:
                self._mark_gone(now)
        else:
            try:
                if self._proc.status() == psutil.STATUS_ZOMBIE and not leader_exited(self.pid):
                    self._mark_gone(now)
            except psutil.NoSuchProcess:
                self._mark_gone(now)
        return self.gone

    def state(self) -> str:
        try:
            status = self._proc.status() if self._proc else "gone"
        except psutil.NoSuchProcess:
            return "gone"
        if status == psutil.STATUS_ZOMBIE:
            return group_state(self.pid) or status
        return status

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def result(self) -> dict:
        rec = self.info.as_dict()
        if not rec.get("cmdline"):
            rec["cmdline"] = self.cmdline or ("[%s]" % self.info.name if self.info.name else "")
        rec.update(reason=self.reason, signals=self.signals,
                   gone_after=None if self.gone_at is None or self.sent_at is None
                   else round(self.gone_at - self.sent_at, 3))
        if self.error:
            rec["error"] = self.error
        if self.sigkill_at_once:
            rec["sigkill_at_once"] = self.sigkill_at_once
        if self.continued:
            rec["continued"] = self.continued
        return rec


def wait_gone(targets: list, deadline: float) -> list:
    """Block until every target is gone or the monotonic deadline passes."""
    while True:
        now = time.monotonic()
        alive = [t for t in targets if not t.refresh(now)]
        if not alive or now >= deadline:
            return alive
        fds = [t._pidfd for t in alive if t._pidfd is not None]
        wait = min(deadline - now, POLL_FALLBACK if len(fds) < len(alive) else deadline - now)
        if fds:
            select.select(fds, [], [], wait)
        else:
            time.sleep(wait)


def leaves_first(targets: list) -> list:
    """The targets with every descendant before its ancestors (otherwise in the given order).

    A child that dies with its parent (PR_SET_PDEATHSIG, as SGLang's schedulers set it) can be
    gone and reaped between our signal to the parent and our signal to it; signalled first, it
    gets our own signal, and the result names every process we took down. (The reverse, a
    parent that ends its other children when one dies, is held off by release(): SIGSTOP first.)
    """
    ppid = {t.pid: t.info.ppid for t in targets}

    def depth(pid):
        seen = {pid}
        while ppid.get(pid) in ppid and ppid[pid] not in seen:
            pid = ppid[pid]
            seen.add(pid)
        return len(seen)

    return sorted(targets, key=lambda t: -depth(t.pid))


# How long release() waits for the targets it holds to show as stopped: SIGSTOP takes effect when
# the target next enters the kernel, at once for one that sleeps, within a tick for one on a CPU.
HOLD_WAIT = 0.5


def wait_held(targets: list, until: float) -> None:
    """Poll until every target's live threads are stopped (state T, or t under a tracer) or gone,
    or UNTIL passes (then go on: the SIGKILL that follows decides either way)."""
    waiting = list(targets)
    while waiting:
        waiting = [t for t in waiting if any(state not in ("T", "t") for _tid, state in live_tasks(t.pid))]
        if not waiting or time.monotonic() >= until:
            return
        time.sleep(0.001)


def release(targets: list, term_timeout: float, deadline: float, on_progress: Any = None) -> list:
    """SIGTERM, wait up to term_timeout, SIGKILL the rest, wait to the deadline.

    A target that cannot act on SIGTERM (_threads.term_blocked) gets SIGKILL at
    once, recorded in its `sigkill_at_once`; one stopped by job control gets
    SIGCONT right after its SIGTERM, recorded in its `continued`. When a signal is refused (EPERM),
    nothing is waited for: the refused targets are returned at once.

    The SIGKILL comes no later than KILL_RESERVE (at most half the time left)
    before the deadline, even when term_timeout would reach past it.
    Returns the targets still alive at the deadline.
    """
    live = leaves_first([t for t in targets if not t.gone])
    if not live:
        return []
    if term_timeout > 0:
        # SIGTERM that cannot take effect would only cost term_timeout. Read for every
        # target before the first signal, so the signals go out together: a parent's
        # SIGTERM handler that takes its children down must not beat our own signal to them.
        for target in live:
            target.sigkill_at_once = term_blocked(target.pid)
            if not target.sigkill_at_once and job_stopped(target.pid):
                target.continued = ("stopped (state T): SIGCONT right after SIGTERM, "
                                    "which stays pending on a stopped process")
    # Those that get SIGKILL at once are all held still first: signalled one after another, a
    # parent that ends its other children when one dies (SGLang's does) could take a sibling down
    # between our signals, and the result would not name it.
    # Ancestors are held first, so none can act on a descendant that stops (SIGCHLD) either.
    at_once = [t for t in live if term_timeout <= 0 or t.sigkill_at_once]
    for target in reversed(at_once):
        target.hold()
    wait_held(at_once, time.monotonic() + HOLD_WAIT)
    now = time.monotonic()
    termed = []
    for target in live:
        if term_timeout <= 0 or target.sigkill_at_once:
            target.send(signal.SIGKILL, now)
        else:
            target.send(signal.SIGTERM, now)
            termed.append(target)
    # After every SIGTERM is out, as systemd does: a stopped parent continued first
    # must not get to act before its stopped children have their own SIGTERM.
    for target in termed:
        if target.continued and not target.denied:
            target.send(signal.SIGCONT, now)
    denied = [t for t in live if t.denied]
    if denied:
        return denied  # the caller fails at once: waiting cannot help
    if termed:
        reserve = min(KILL_RESERVE, max(deadline - now, 0.0) / 2.0)
        alive = wait_gone(termed, min(deadline - reserve, now + term_timeout))
        now = time.monotonic()
        for target in alive:
            target.send(signal.SIGKILL, now)
    return wait_gone(live, deadline)


def close_all(targets: list) -> None:
    for target in targets:
        target.close()
