# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/action.py: the controller actions' one run(), through benchmark_report run by `ansible` on
localhost: bad input fails with the report's own message, a directory that cannot be written fails
naming it, and a missing option is Ansible's own refusal."""

from __future__ import annotations

from tests.support.ansible import run_module


def test_bad_input_fails_with_the_reports_message(tmp_path):
    res = run_module("benchmark_report", {"results": {"h1": "x"}, "dest_dir": str(tmp_path / "r")})
    assert res["_rc"] != 0 and res["msg"] == "results for h1 must be a dict with baseline/candidate"
    # Not said a third time as the cause of a raised error (ansible-core's own [ERROR] line and the
    # failed result's are the two left).
    assert "caused by" not in res["_stdout"], res["_stdout"]
    assert res["_stdout"].count("must be a dict with baseline/candidate") == 2, res["_stdout"]
    assert not (tmp_path / "r").exists()


def test_a_directory_that_cannot_be_written_is_named(tmp_path):
    (tmp_path / "file").write_text("x")
    results = {"h1": {"baseline": {"levels": [{"concurrency": 1, "output_tok_s": 10.0, "completed": 1, "failed": 0}]}}}
    res = run_module("benchmark_report", {"results": results, "dest_dir": str(tmp_path / "file" / "r")})
    assert res["_rc"] != 0
    assert res["msg"].startswith("cannot write under %s: " % (tmp_path / "file" / "r")), res["msg"]


def test_a_missing_option_is_refused_before_any_work(tmp_path):
    res = run_module("benchmark_report", {"results": {}})
    assert res["_rc"] != 0 and "missing required arguments: dest_dir" in res["msg"]
