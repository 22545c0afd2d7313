# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers the unit tests import by name (a conftest module is not importable by
name once several test folders have one)."""

from __future__ import annotations

import os
import sys

from _polling import poll  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(REPO, "build", "collections")
SIM = os.path.join(REPO, "tests", "sim")
for _path in (COLLECTIONS, SIM):
    if _path not in sys.path:
        sys.path.insert(0, _path)


def poll_until(predicate, timeout=10.0, interval=0.01, what="condition"):
    """Return predicate()'s first truthy value; fail after `timeout` seconds."""
    return poll(predicate, timeout, interval, what)


def proc_state(pid):
    """State letter from /proc/PID/stat ('Z' for a zombie), or None when gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
