# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/closing.py: why a host failed, the controller's closing lines and the hosts not ok."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import closing


def test_failure_reason_names_the_task_and_its_message():
    assert closing.failure_reason({"msg": "  boom \n"}, {"name": "Wait until ready"}, {"ping": "pong"}) \
        == "Wait until ready: boom"
    assert closing.failure_reason({}, None, None) == "?: failed"


def test_failure_reason_unreachable_from_the_ping():
    ping = {"unreachable": True, "msg": "Failed to connect to the host via ssh: refused\n"}
    assert closing.failure_reason({"msg": "x"}, {"name": "T"}, ping) \
        == "unreachable: Failed to connect to the host via ssh: refused"


def test_report_lines_and_not_ok():
    results = [{"host": "b", "outcome": "failed", "line": "b: FAILED"}, {"host": "a", "outcome": "ok", "line": "a: ok"}]
    report = {"json_path": "/r/benchmark.json", "markdown_path": "/r/benchmark.md", "plot_path": None,
              "html_path": "/r/benchmark.html"}
    assert closing.report_lines(results, ["c"], report=report, summary_file="/r/swap_summary.json") == [
        "report: /r/benchmark.json, /r/benchmark.md, /r/benchmark.html", "summary: /r/swap_summary.json",
        "a: ok", "b: FAILED", "c: " + closing.NO_RESULT]
    assert closing.report_lines(results, [], report={})[0] == "report: none (no host completed)"
    assert closing.report_lines(results, [])[0] == "a: ok"
    assert closing.not_ok(results, ["c"]) == ["b", "c"]
    assert closing.not_ok([{"host": "a", "outcome": "clean"}], [], ok="clean") == []


def test_a_missing_host_shows_as_text():
    assert closing.report_lines([], ["h|1\n*x*"]) == [r"h\|1 \*x\*: " + closing.NO_RESULT]
