# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/supervisor.py on a real detached process: started in its own session with its log and
state file, kept when the same configuration runs, refused when another runs, stopped gracefully
(the state file gone), a port in use refused naming its holder; check mode changes nothing."""

from __future__ import annotations

import os
import socket
import sys

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._server import supervisor
from tests.support.polling import poll

SERVER = [sys.executable, "-c", "import time; print('serving', flush=True); time.sleep(600)", "gf-supervised"]


def _read(path):
    with open(path) as handle:
        return handle.read()


@pytest.fixture
def params(tmp_path, own_procs):
    out = {"state": "started", "state_file": str(tmp_path / "state" / "s.json"), "argv": SERVER, "env": {"GF_X": "1"},
           "log_path": str(tmp_path / "log" / "s.log"), "fingerprint": "fp-1", "listen_host": "127.0.0.1",
           "listen_port": 0, "stop_timeout": 10.0, "lock_timeout": 5.0}
    yield out
    state = supervisor.read_state(out["state_file"])
    if state:  # a failed test: end what it started, by the recorded PID
        own_procs.add(state["pid"])


def test_start_keep_refuse_and_stop(params):
    assert supervisor.supervise(params, check_mode=True) == {"changed": True, "running": True}
    assert not os.path.exists(params["state_file"])
    started = supervisor.supervise(params)
    pid = started["pid"]
    assert started["changed"] and os.getsid(pid) == pid  # its own session: it outlives the module
    poll(lambda: _read(params["log_path"]) == "serving\n", what="the server's first line in its log")
    with open("/proc/%d/environ" % pid, "rb") as handle:
        assert b"GF_X=1" in handle.read().split(b"\0")
    now = supervisor.supervise(dict(params, state="status"))
    assert (now["running"], now["pid"], now["fingerprint"], now["changed"]) == (True, pid, "fp-1", False)
    assert supervisor.supervise(params)["changed"] is False  # the same configuration runs: kept
    with pytest.raises(GpuFleetError, match="a server with another configuration runs \\(pid %d\\); stop it first" % pid):
        supervisor.supervise(dict(params, fingerprint="fp-2"))
    stopped = supervisor.supervise(dict(params, state="stopped"))
    assert stopped["changed"] and stopped["stop"]["graceful"] is True and stopped["pid"] == pid
    assert not os.path.exists(params["state_file"])
    again = supervisor.supervise(dict(params, state="stopped"))
    assert again["changed"] is False and again["msg"].startswith("already stopped")


def test_a_port_in_use_is_refused_naming_its_holder(params):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(GpuFleetError) as err:
            supervisor.supervise(dict(params, listen_port=port))
    assert err.value.msg.startswith("port 127.0.0.1:%d is already in use by pid %d (" % (port, os.getpid()))
    assert supervisor.read_state(params["state_file"]) is None


def test_a_state_file_of_a_process_that_is_gone_is_not_running(params):
    os.makedirs(os.path.dirname(params["state_file"]))
    with open(params["state_file"], "w") as handle:
        handle.write('{"pid": %d, "pgid": %d, "create_time": 1.0, "argv": ["x"]}' % (os.getpid(), os.getpid()))
    assert supervisor.status(params["state_file"])["running"] is False  # this PID, another start time
    assert supervisor.stop(params["state_file"], 1.0) == (False, {"was_running": False})
    assert not os.path.exists(params["state_file"])
