# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Process watch: PID start time, zombies and their exit status, pidfiles, systemd units."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._server import watch


def fake_stat(proc, pid, state="S", start=1000, wait_status=0, comm="python3 (x)"):
    """A /proc/PID/stat line with 52 fields; comm with a space and a paren, like a renamed process."""
    fields = [str(pid), "(%s)" % comm, state] + ["0"] * 18 + [str(start)] + ["0"] * 29 + [str(wait_status)]
    assert len(fields) == 52
    (proc / str(pid)).mkdir(parents=True, exist_ok=True)
    (proc / str(pid) / "stat").write_text(" ".join(fields) + "\n")


@pytest.fixture
def child():
    """A real child process; the test decides when it ends. Always stopped and reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(7)"],
                            stdin=subprocess.PIPE)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def wait_for_zombie(pid, deadline_s=5.0):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        stat = watch.read_proc_stat(pid)
        if stat and stat[0] == "Z":
            return
        time.sleep(0.01)
    raise AssertionError("process %d did not become a zombie" % pid)


def test_real_child_alive_then_zombie_with_exit_code(child):
    pid_watch = watch.PidWatch(pid=child.pid)
    assert pid_watch.poll().alive is True
    child.stdin.close()  # the child exits with 7; not reaped yet, so it is a zombie
    wait_for_zombie(child.pid)
    state = pid_watch.poll()
    assert (state.alive, state.pid, state.exit_code) == (False, child.pid, 7)


@pytest.mark.parametrize("wait_status,code", [(3 << 8, 3), (9, -9), (0, 0)])
def test_zombie_exit_status_decoded(tmp_path, wait_status, code):
    fake_stat(tmp_path, 4242, state="Z", wait_status=wait_status)
    state = watch.PidWatch(pid=4242, proc=str(tmp_path)).poll()
    assert (state.alive, state.exit_code) == (False, code)


def test_gone_and_reused_pid(tmp_path):
    fake_stat(tmp_path, 4242, start=1000)
    pid_watch = watch.PidWatch(pid=4242, proc=str(tmp_path))
    assert pid_watch.poll().alive is True
    fake_stat(tmp_path, 4242, start=2000)  # same PID, another process
    state = pid_watch.poll()
    assert state.alive is False and "reused" in state.detail
    (tmp_path / "4242" / "stat").unlink()
    assert pid_watch.poll().alive is False


def test_pidfile_late_then_followed(tmp_path):
    proc = tmp_path / "proc"
    pidfile = tmp_path / "server.pid"
    pid_watch = watch.PidWatch(pidfile=str(pidfile), proc=str(proc))
    assert pid_watch.poll().alive is None  # launcher has not written it yet
    fake_stat(proc, 100)
    pidfile.write_text("100\n")
    assert (pid_watch.poll().alive, pid_watch.pid) == (True, 100)
    fake_stat(proc, 200, start=5)
    pidfile.write_text("200\n")  # relaunched: follow the new PID
    assert (pid_watch.poll().alive, pid_watch.pid) == (True, 200)
    pidfile.unlink()  # removed at exit: keep watching the last PID
    fake_stat(proc, 200, state="Z", start=5, wait_status=1 << 8)
    assert (pid_watch.poll().alive, pid_watch.poll().exit_code) == (False, 1)


SHOW = "MainPID={pid}\nActiveState={active}\nSubState={sub}\nExecMainCode={how}\nExecMainStatus={status}\n"


@pytest.mark.parametrize("pid,active,sub,how,status,alive,code", [
    (1234, "active", "running", "0", "0", True, None),
    (0, "activating", "start", "0", "0", True, None),
    (0, "failed", "failed", "1", "2", False, 2),
    (0, "failed", "failed", "2", "9", False, -9),
    (0, "activating", "auto-restart", "1", "1", False, 1),
    (0, "inactive", "dead", "0", "0", False, None),
])
def test_systemd_states(pid, active, sub, how, status, alive, code):
    seen = []

    def runner(command):
        seen.append(command)
        return SHOW.format(pid=pid, active=active, sub=sub, how=how, status=status)

    state = watch.SystemdWatch("sglang.service", "/bin/systemctl", runner=runner).poll()
    assert (state.alive, state.exit_code, state.pid) == (alive, code, pid or None)
    assert seen[0][:3] == ["/bin/systemctl", "show", "sglang.service"]
    assert "--property=ActiveState" in seen[0]


def test_systemctl_failure_raises():
    unit = watch.SystemdWatch("x.service", systemctl="false")
    with pytest.raises(OSError):
        unit.poll()


def test_make_watch_kinds():
    assert isinstance(watch.make_watch(systemd_unit="a.service"), watch.SystemdWatch)
    assert isinstance(watch.make_watch(pid=1), watch.PidWatch)
    assert watch.make_watch().poll().alive is None


def test_a_known_identity_catches_a_pid_reused_before_the_first_poll(tmp_path):
    # A later slice of the sliced wait: the PID already names another process when it starts.
    fake_stat(tmp_path, 4242, start=2000)
    state = watch.PidWatch(pid=4242, proc=str(tmp_path), identity={"pid": 4242, "start_time": 1000}).poll()
    assert state.alive is False and "reused" in state.detail
    same = watch.PidWatch(pid=4242, proc=str(tmp_path), identity={"pid": 4242, "start_time": 2000}).poll()
    assert same.alive is True and same.as_dict()["start_time"] == 2000


def test_a_known_identity_applies_to_the_pid_the_pidfile_names(tmp_path):
    proc = tmp_path / "proc"
    pidfile = tmp_path / "server.pid"
    fake_stat(proc, 100, start=2000)
    pidfile.write_text("100\n")
    assert watch.PidWatch(pidfile=str(pidfile), proc=str(proc),
                          identity={"pid": 100, "start_time": 1000}).poll().alive is False
    # A relaunch wrote another PID: the identity of the old one does not apply to it.
    fake_stat(proc, 200, start=3000)
    pidfile.write_text("200\n")
    assert watch.PidWatch(pidfile=str(pidfile), proc=str(proc),
                          identity={"pid": 100, "start_time": 1000}).poll().alive is True
