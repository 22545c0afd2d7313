# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/router_lock.py run as Ansible runs it: its documented options are its argument spec; a
lock taken by an `ansible` run that has ended is stale, and the next run takes it over and drops it."""

from __future__ import annotations

from tests.support import module_docs
from tests.support.ansible import run_module


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("router_lock") == []


def test_a_lock_of_a_run_that_ended_is_taken_over(tmp_path):
    args = {"router_url": "http://127.0.0.1:30000", "lock_dir": str(tmp_path), "what": "first"}
    first = run_module("router_lock", args)
    assert first["_rc"] == 0 and first["changed"] is True and first["stale"] is None, first.get("msg")
    second = run_module("router_lock", dict(args, what="second"))
    assert second["_rc"] == 0 and second["stale"]["what"] == "first" and second["holder"]["what"] == "second"
    assert second["holder"]["pid"] != first["holder"]["pid"] and "ansible" in second["holder"]["argv"]
