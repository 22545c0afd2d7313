# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/host_lock.py: the flock on STATE_FILE.lock, held by a real second process: the later run
waits, then fails naming the holder's PID; the lock is free once the holder exits, even killed."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._server.host_lock import host_lock
from tests.support.paths import COLLECTIONS

HOLD = ("import sys; sys.path.insert(0, %r)\n"
        "from ansible_collections.gpufleet.serving.plugins.module_utils._server.host_lock import host_lock\n"
        "with host_lock(sys.argv[1], 5):\n"
        "    print('locked', flush=True)\n"
        "    sys.stdin.readline()\n" % COLLECTIONS)


@pytest.fixture
def holder(own_procs, tmp_path):
    state = str(tmp_path / "run" / "server.json")
    proc = own_procs.python(HOLD, state)
    assert proc.stdout.readline().strip() == "locked"
    return proc, state


def test_the_lock_file_is_made_and_names_its_holder(tmp_path):
    state = str(tmp_path / "deep" / "dir" / "server.json")
    with host_lock(state, 1) as path:
        assert path == state + ".lock"
        with open(path) as handle:
            assert handle.read() == "%d\n" % os.getpid()
    assert os.path.exists(state + ".lock")  # stays: a third run must lock the same file
    with host_lock(state, 0):  # free again at once
        pass


def test_a_second_run_waits_out_its_timeout_and_names_the_holder(holder):
    proc, state = holder
    t0 = time.monotonic()
    with pytest.raises(GpuFleetError) as err:
        with host_lock(state, 0.3):
            pass
    assert 0.3 <= time.monotonic() - t0 < 3
    assert "another server_process run (pid %d) holds %s.lock" % (proc.pid, state) in err.value.msg
    assert "lock_timeout (0.3 s)" in err.value.msg


def test_the_waiting_run_gets_the_lock_when_the_holder_finishes(holder):
    proc, state = holder
    got = []
    waiter = threading.Thread(target=lambda: got.append(_take(state)))
    waiter.start()
    proc.stdin.write("done\n")
    proc.stdin.flush()
    waiter.join(timeout=10)
    assert got == [state + ".lock"] and proc.wait(timeout=10) == 0


def test_a_killed_holder_leaves_no_lock_behind(holder):
    proc, state = holder
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    with host_lock(state, 0) as path:
        assert path == state + ".lock"


def test_a_lock_file_that_cannot_be_made_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(GpuFleetError, match="cannot open the lock file .*/file/server.json.lock: File exists"):
        with host_lock(str(tmp_path / "file" / "server.json"), 1):
            pass


def _take(state):
    with host_lock(state, 10) as path:
        return path
