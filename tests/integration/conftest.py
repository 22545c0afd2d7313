import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _pidns  # noqa: E402
from _harness import OwnProcesses, fakegpu  # noqa: E402


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
    if not _pidns.available():
        pytest.skip("needs root, unshare, nsenter and tini (apt-get install tini)")
    space = _pidns.PidNamespace()
    yield space
    space.stop()
