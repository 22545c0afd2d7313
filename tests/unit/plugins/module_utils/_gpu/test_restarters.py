# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Restarters: a surviving parent that restarts by design, known by what it runs."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import restarters
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo


def proc(pid, ppid, argv, exe):
    return ProcInfo(pid, ppid, 1000.0 + pid, "root", argv, exe.rsplit("/", 1)[-1], "sleeping", uid=0, exe=exe)


@pytest.mark.parametrize("argv, exe, kind", [
    (["bash", "-c", "while true; do python3 -m sglang.launch_server; sleep 1; done"], "/usr/bin/bash",
     "a shell running a loop (while)"),
    (["/bin/sh", "-ec", "until false; do ./serve; done"], "/usr/bin/dash", "a shell running a loop (until)"),
    (["bash", "-c", "python3 -m sglang.launch_server & wait"], "/usr/bin/bash", None),
    (["bash", "-c", "echo while we wait; python3 serve.py"], "/usr/bin/bash", None),
    (["/usr/bin/python3", "/usr/bin/supervisord", "-n"], "/usr/bin/python3.12", "supervisord"),
    (["runsv", "sglang"], "/usr/bin/runsv", "runit (runsv)"),
    (["s6-supervise", "sglang"], "/usr/bin/s6-supervise", "s6 (s6-supervise)"),
    # A title proves nothing: a python titled like a loop shell is no restarter.
    (["bash", "-c", "while true; do x; done"], "/usr/bin/python3", None),
])
def test_restarter_kind_by_what_the_parent_runs(argv, exe, kind):
    assert restarters.restarter_kind(proc(10, 1, argv, exe), None) == kind


def test_loop_in_a_script_file_is_read(tmp_path):
    script = tmp_path / "run_server.sh"
    script.write_text("#!/bin/bash\nset -e\nwhile :; do\n  python3 -m sglang.launch_server\n  sleep 1\ndone\n")
    assert restarters.restarter_kind(proc(10, 1, ["bash", str(script)], "/usr/bin/bash"), None) == \
        "a shell running a loop (while)"


def test_ancestry_parent_first_up_to_init():
    table = {p.pid: p for p in (proc(1, 0, ["init"], "/sbin/init"), proc(5, 1, ["bash"], "/usr/bin/bash"),
                                proc(9, 5, ["python3"], "/usr/bin/python3"))}
    assert [a.pid for a in restarters.ancestry(table, 9)] == [5, 1]
    assert restarters.ancestry(table, 1) == []
