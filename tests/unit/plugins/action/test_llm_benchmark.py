# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The llm_benchmark action: which workloads travel from the controller, and a controller file that
is not there fails before the module runs, naming where it looked (`ansible` on localhost)."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.action.llm_benchmark import needs_copy
from tests.support.ansible import run_module


@pytest.mark.parametrize("workload, copied", [
    ({"source": "file", "path": "prompts.jsonl"}, True),
    ({"source": "file", "path": "prompts.jsonl", "location": "controller"}, True),
    ({"source": "file", "path": "/data/prompts.jsonl", "location": "host"}, False),
    ({"source": "file", "path": ""}, False),
    ({"source": "builtin"}, False),
    (None, False),
    ("file", False),
])
def test_only_a_controller_file_is_copied(workload, copied):
    assert needs_copy(workload) is copied


def test_a_controller_file_that_is_not_there_fails_before_the_module_runs():
    # Nothing listens on port 9 of loopback: had the module run, the message would be about the connection.
    res = run_module("llm_benchmark", {"base_url": "http://127.0.0.1:9",
                                       "workload": {"source": "file", "path": "gf_no_such_workload.jsonl"}})
    assert res["_rc"] != 0
    assert res["msg"].startswith("workload gf_no_such_workload.jsonl: file not found on the controller (")
    assert res["msg"].endswith("set workload.location: host for a file already on the host")
