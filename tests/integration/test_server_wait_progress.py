# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""server_wait with progress_interval: its action runs the module in slices and prints progress.

The real module and action through `ansible localhost`, against the fake server of
test_server_wait.py held in warm-up: progress lines appear in the output between slices, the
result is one result for the whole wait, and the timeout names the phase and the log's tail.
"""

from __future__ import annotations

import re

import pytest
from _wait_fixtures import FakeServer, ModuleRun, progress_has, progress_time

from tests.support.polling import poll
from tests.support.processes import OwnProcesses

PROGRESS = re.compile(r"^localhost: (http://127\.0\.0\.1:\d+) still starting after (\d+) s, phase warmup$", re.M)


@pytest.fixture
def procs():
    started = OwnProcesses()
    yield started
    started.stop_all(grace=5)


def in_warmup(procs, tmp_path):
    server = FakeServer(procs, tmp_path, step=0.05, warmup=0.05)  # held in warm-up until released
    server.wait_port()
    poll(lambda: "server_args=" in server.log.read_text() and "model_info" in server.log.read_text(), 10, 0.01,
         "the server to reach warm-up")
    return server


def run_sliced(procs, server, tmp_path, **args):
    progress = tmp_path / "progress"
    params = {"url": server.url, "pid": server.pid, "log_path": str(server.log), "progress_file": str(progress),
              "progress_interval": 1, "timeout": 60}
    params.update(args)
    run = ModuleRun(procs, params)
    run.progress = progress
    return run


def test_timeout_prints_progress_and_names_phase_and_log_tail(procs, tmp_path):
    server = in_warmup(procs, tmp_path)
    run = run_sliced(procs, server, tmp_path, timeout=5)
    rc, result = run.finish()
    assert rc != 0
    lines = PROGRESS.findall(run.stdout)
    assert len(lines) >= 1, run.stdout
    assert {url for url, unused in lines} == {server.url}
    seconds = [int(s) for unused, s in lines]
    assert seconds == sorted(seconds) and seconds[-1] < 5
    assert result["cause"]["kind"] == "timeout"
    msg = result["msg"]
    assert msg.startswith("Server at %s not ready after " % server.url), msg
    assert "(timeout 5.0 s); phase: warmup; last health: HTTP 503; log %s: " % server.log in msg
    assert "server_args=" in " ".join(result["log_tail"]) and result["log_tail"][-1].strip() in msg
    assert result["elapsed"] >= 5.0
    assert result["process"]["alive"] is True


def test_ready_after_several_slices_is_one_result_timed_from_the_start(procs, tmp_path):
    server = in_warmup(procs, tmp_path)
    run = run_sliced(procs, server, tmp_path)
    poll(lambda: progress_has(run.progress, "waiting for") or run.proc.poll() is not None, 30, 0.01,
         "the first slice to start")
    first = progress_time(run.progress, "waiting for")
    # The next slice starts its progress file anew: a later "waiting for" line.
    poll(lambda: (progress_time(run.progress, "waiting for") or 0) > first or run.proc.poll() is not None,
         30, 0.01, "a second slice")
    server.release()
    rc, result = run.finish()
    assert rc == 0, run.stdout + run.stderr
    assert result["ready"] is True and "failed" not in result
    assert PROGRESS.search(run.stdout), run.stdout
    assert result["elapsed"] >= 1.0
    names = [p["name"] for p in result["phases"]]
    assert names.index("warmup") < names.index("ready")
    ready_at = [p["at"] for p in result["phases"] if p["name"] == "ready"][0]
    assert ready_at >= 1.0  # counted from the start of the wait, not of the last slice
