# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The import path every test and every helper program sees, set in this one place.

- the repository root: helpers are imported as `tests.support.*`;
- build/collections: `make setup` links build/collections/ansible_collections/gpufleet/serving
  to the repository root, and the collection's code is imported through that link,
  exactly as Ansible does;
- sim: the engine simulator's own packages (`simlib`, `realsglang`), which its
  programs (simctl, sglang-python) import under those names too.

tests/conftest.py calls install() for pytest; the programs in tests/support/scripts/
call it through their _bootstrap.py (they run as `python script.py`).
"""
import sys

from tests.support.paths import COLLECTIONS, REPO, SIM


def install():
    for path in (SIM, COLLECTIONS, REPO):
        if path not in sys.path:
            sys.path.insert(0, path)
