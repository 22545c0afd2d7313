# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The experiment_report action run by `ansible` on localhost: the report of an experiment_plan's
result, its variants without records named; an experiment that is not a plan's result is refused
naming what it lacks."""

from __future__ import annotations

from tests.support.ansible import run_module

EXPERIMENT = {"reference": "base", "benchmark": {"levels": [1]},
              "variants": [{"name": "base", "engine": "sglang"}, {"name": "other", "engine": "vllm"}]}


def test_the_report_of_a_plan_without_records(tmp_path):
    planned = run_module("experiment_plan", {"experiment": EXPERIMENT, "hosts": ["h1"], "results_dir": str(tmp_path / "res")})
    plan = {k: v for k, v in planned.items() if not k.startswith("_") and k != "changed"}
    res = run_module("experiment_report", {"experiment": plan, "results_dir": str(tmp_path / "res"),
                                           "dest_dir": str(tmp_path / "rep"), "title": "T"})
    assert res["_rc"] == 0, res.get("msg")
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == sorted(
        p.rsplit("/", 1)[1] for p in (res["json_path"], res["markdown_path"], res["html_path"]) + ((res["plot_path"],) if res.get("plot_path") else ()))


def test_an_experiment_that_is_no_plan_result_is_refused(tmp_path):
    res = run_module("experiment_report", {"experiment": EXPERIMENT, "results_dir": str(tmp_path), "dest_dir": str(tmp_path)})
    assert res["_rc"] != 0
    assert res["msg"] == ("experiment lacks name, file, checksum, spread, assignments: pass the whole result of "
                          "gpufleet.serving.experiment_plan")
