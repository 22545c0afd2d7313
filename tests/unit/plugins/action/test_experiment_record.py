# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The experiment_record action run by `ansible` on localhost: the record written whole at dest with
its finish time; in check mode nothing is written."""

from __future__ import annotations

import json

from tests.support.ansible import run_module


def test_the_record_is_written_and_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / "records" / "h1" / "base.json"
    args = {"record": {"variant": "base", "host": "h1", "outcome": "ok"}, "dest": str(dest)}
    assert run_module("experiment_record", args, check=True)["changed"] is True
    assert not dest.exists()
    res = run_module("experiment_record", args)
    assert res["_rc"] == 0 and res["changed"] is True and res["dest"] == str(dest), res.get("msg")
    written = json.loads(dest.read_text())
    assert written == res["record"] and written["variant"] == "base" and written["finished_at"]
