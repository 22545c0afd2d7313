# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The router_probe_report action run by `ansible` on localhost: the figures returned, the files
written under dest_dir and unchanged on a second run; in check mode nothing is written."""

from __future__ import annotations

import json

from tests.support.ansible import run_module
from tests.support.probe_data import DRAINS, probe


def test_the_report_is_written_once_and_check_mode_writes_nothing(tmp_path):
    args = {"probe": probe(), "drains": DRAINS, "dest_dir": str(tmp_path / "r")}
    assert run_module("router_probe_report", args, check=True)["changed"] is True
    assert not (tmp_path / "r").exists()
    res = run_module("router_probe_report", args)
    assert res["_rc"] == 0 and res["changed"] is True, res.get("msg")
    assert res["figures"] == {"sent": 10, "completed": 8, "failed": 1, "broken": 1, "healthy_floor": 2}
    assert res["headline"].startswith("10 requests through the router, 8 completed, 1 failed")
    assert json.loads((tmp_path / "r" / "rollout_probe.json").read_text())["hosts"][1]["out_of_router_s"] == 3.0
    assert (tmp_path / "r" / "rollout_probe.png").read_bytes().startswith(b"\x89PNG")
    assert run_module("router_probe_report", args)["changed"] is False
