# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/server_plan.py: the options it documents (fragments merged, as ansible-doc reads them) are its
real argument spec, names and defaults, read from the module itself (tests/support/module_docs.py); run
on this host for an instance nothing runs yet, it composes the command line and decides a relaunch,
changing nothing (its decisions in detail: module_utils/_server/test_plan.py)."""

from __future__ import annotations

import os
import sys

from tests.support import module_docs


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("server_plan") == []


def test_a_new_instance_is_composed_and_relaunched_and_nothing_changes(tmp_path):
    state, log = tmp_path / "state", tmp_path / "log"
    res = module_docs.run("server_plan", {"instance": "sglang-t", "model_path": str(tmp_path / "model"),
                                          "state_dir": str(state), "log_dir": str(log), "port": 39999,
                                          "python": sys.executable, "tp_size": 2})
    assert res["_rc"] == 0, res.get("msg")
    assert res["argv"][1:] == ["serve", "--model-path", str(tmp_path / "model"), "--tp-size", "2", "--host",
                               "127.0.0.1", "--port", "39999", "--enable-metrics"]
    assert (res["decision"], res["running"], res["changed"]) == ("relaunch", False, False)
    assert res["paths"]["state_file"] == str(state / "sglang-t.json") and res["url"] == "http://127.0.0.1:39999"
    assert not os.path.exists(state) and not os.path.exists(log)  # only reads
