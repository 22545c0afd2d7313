# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/server_info.py: the options it documents are its real argument spec, and run as a module it hands back a
server's last group-down record (its reading: tests/unit/plugins/module_utils/_server/test_info.py)."""

from __future__ import annotations

import json

from tests.support import module_docs


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("server_info") == []


def test_the_module_returns_the_last_group_down_record(tmp_path):
    (tmp_path / "sglang-30000.json").write_text(json.dumps({"pid": 2 ** 22 + 7, "create_time": 1.0}))
    record = {"group": "server group [a, b]", "node": "b", "rank": 1, "cause": "its main process is gone", "log_lines": [],
              "seen_by": "a", "at": 5.0, "orderly": False, "gpus": {"checked": True, "free": True}}
    (tmp_path / "sglang-30000.group-down.json").write_text(json.dumps(record))
    result = module_docs.run("server_info", {"state_dir": str(tmp_path)})
    assert (result["_rc"], result["changed"]) == (0, False), result.get("msg")
    [server] = result["servers"]
    assert (server["engine"], server["port"], server["running"]) == ("sglang", 30000, False)
    assert server["last_group_down"]["gpus"] == {"checked": True, "free": True}
    assert "its group last went down: node b (rank 1): its main process is gone" in result["message"]
