"""Imports for every test, set up once (no test touches sys.path): see tests/support/syspath.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository root
from tests.support import syspath  # noqa: E402  pylint: disable=wrong-import-position

syspath.install()
