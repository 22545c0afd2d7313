# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_proc/threads.py on real processes this test starts: SIGTERM ignored or blocked read from
/proc/PID/status, and a thread group whose leader exited (alive, named, signalled).
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
