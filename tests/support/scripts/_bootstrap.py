"""Import path for the programs in this folder, which tests start as separate processes.

`python tests/support/scripts/X.py` puts only this folder on sys.path; `import _bootstrap`
adds the repository root and then what tests/conftest.py sets up (tests/support/syspath.py).
"""
import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from tests.support import syspath  # noqa: E402  pylint: disable=wrong-import-position

syspath.install()
