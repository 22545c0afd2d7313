import os

import pytest
from simlib import fakegpu

from tests.support import pidns
from tests.support.processes import OwnProcesses
from tests.support.servers.launch import StandIn


@pytest.fixture
def gpu_root(tmp_path):
    """A fresh fake 8-GPU host root; yields (root, env for processes that use it)."""
    root = str(tmp_path / "gpu")
    fakegpu.init(root, gpus=8)
    env = dict(os.environ)
    env.update(fakegpu.env(root))
    yield root, env


@pytest.fixture
def procs():
    own = OwnProcesses()
    yield own
    own.stop_all()


@pytest.fixture
def ns():
    """A private PID namespace: pattern kills in it reach nothing outside."""
    if not pidns.available():
        pytest.skip("needs root, unshare, nsenter and tini (apt-get install tini)")
    space = pidns.PidNamespace()
    yield space
    space.stop()


@pytest.fixture
def server():
    """start(*options): tests/support/servers/standin.py serving at once; all stopped at the end."""
    started = []

    def start(*args):
        s = StandIn(*args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
