# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""server_wait, the real module, when the log or the PID changes under it: a log truncated in
place (logrotate's copytruncate) mid-wait, and a PID reused at once (the sliced wait's later slices)."""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import time

from _wait_fixtures import PY, FakeServer, ModuleRun, progress_has

from tests.support import paths
from tests.support.ansible import run_module
from tests.support.net import free_port
from tests.support.polling import poll


def test_copytruncate_mid_wait_still_finds_the_cause(procs, tmp_path):
    server = FakeServer(procs, tmp_path, crash="oom", crash_at="load", step=0.05)
    server.wait_port()
    progress = tmp_path / "progress"
    run = ModuleRun(procs, {"url": server.url, "pid": server.pid, "log_path": str(server.log),
                            "progress_file": str(progress), "timeout": 60})
    # The module has read the start-up lines (its read position is past them) ...
    poll(lambda: progress_has(progress, "phase=loading_weights") or run.proc.poll() is not None, 30, 0.01,
         "the module to read the start-up lines")
    shutil.copy(str(server.log), str(server.log) + ".1")  # ... when logrotate copies and truncates the log,
    os.truncate(str(server.log), 0)
    server.release()  # and the server writes its out-of-memory death, longer than what was there before
    rc, result = run.finish()
    assert rc != 0, result
    assert result["cause"]["kind"] == "oom", result["msg"]
    assert "CUDA out of memory" in result["cause"]["line"]


class PidReuse:
    """tests/support/scripts/pid_reuse.py inside the namespace: a process, then its PID reused on demand."""

    def __init__(self, ns):
        self.proc = ns.popen([PY, os.path.join(paths.REPO, "tests", "support", "scripts", "pid_reuse.py")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.first = json.loads(self.proc.stdout.readline())

    def reuse(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        second = json.loads(self.proc.stdout.readline())
        assert second["pid"] == self.first["pid"] and second["start_time"] != self.first["start_time"]
        return second

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(10)


def test_a_pid_reused_before_a_slice_starts_is_the_server_gone(ns):
    reuse = PidReuse(ns)
    try:
        reuse.reuse()
        # What the action sends a later slice: the process the first slice watched.
        args = {"url": "http://127.0.0.1:%d" % free_port(), "pid": reuse.first["pid"], "timeout": 20,
                "process_identity": reuse.first}
        result = run_module("server_wait", args, ns=ns)
        assert result["_rc"] != 0 and result.get("cause", {}).get("kind") == "exited", result
        assert "PID reused" in result["process"]["detail"]
        assert result["elapsed"] < 5.0
    finally:
        reuse.stop()


def test_the_sliced_wait_notices_a_pid_reused_between_slices(ns, tmp_path):
    reuse = PidReuse(ns)
    progress = tmp_path / "progress"
    args = {"url": "http://127.0.0.1:%d" % free_port(), "pid": reuse.first["pid"], "timeout": 60,
            "progress_interval": 1, "progress_file": str(progress)}
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            running = pool.submit(run_module, "server_wait", args, ns=ns)
            # The first slice ends (it writes TIMEOUT for its own share); the next is not started yet.
            poll(lambda: progress_has(progress, "TIMEOUT") or running.done(), 60, 0.005, "the first slice's end")
            reuse.reuse()
            reused_at = time.monotonic()
            result = running.result(timeout=120)
        assert result["_rc"] != 0 and result.get("cause", {}).get("kind") == "exited", result.get("msg")
        assert "PID reused" in result["process"]["detail"] or "is gone" in result["process"]["detail"]
        assert time.monotonic() - reused_at < 20  # the next slice, not the 60 s timeout
    finally:
        reuse.stop()
