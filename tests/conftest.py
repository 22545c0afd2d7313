"""Imports for every test, set up once (no test touches sys.path): see tests/support/syspath.py;
and the session's end fails when a test left a process behind (tests/support/leftovers.py)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository root
from tests.support import syspath  # noqa: E402  pylint: disable=wrong-import-position

syspath.install()
from tests.support import leftovers  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind():
    """Set up before every other fixture, so torn down after all of them: what still runs then
    was left behind by a test. Nothing is killed here: the test that started it must end it."""
    yield
    left = leftovers.left_behind(os.getpid())
    assert not left, ("the tests left these processes behind (the test that started one must end it, by PID):\n  "
                      + "\n  ".join(left))
