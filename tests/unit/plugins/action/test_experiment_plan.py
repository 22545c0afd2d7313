# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The experiment_plan action run by `ansible` on localhost: a given experiment's variants assigned
to the host, nothing recorded yet; a file and an experiment together are refused."""

from __future__ import annotations

from tests.support.ansible import run_module

EXPERIMENT = {"reference": "base", "benchmark": {"levels": [1]},
              "variants": [{"name": "base", "engine": "sglang"}, {"name": "other", "engine": "vllm"}]}


def test_every_variant_runs_on_a_host_without_records(tmp_path):
    res = run_module("experiment_plan", {"experiment": EXPERIMENT, "hosts": ["h1"], "results_dir": str(tmp_path)})
    assert res["_rc"] == 0 and res["changed"] is False, res.get("msg")
    assert res["todo"] == {"h1": ["base", "other"]} and res["recorded"] == {"h1": []}
    assert [v["role"] for v in res["variants"]] == ["sglang_server", "vllm_server"]
    assert res["lines"] == ["h1: 2 of 2 variants to run: base, other"]


def test_a_file_and_an_experiment_together_are_refused(tmp_path):
    res = run_module("experiment_plan", {"experiment": EXPERIMENT, "file": str(tmp_path / "e.yml"), "hosts": ["h1"],
                                         "results_dir": str(tmp_path)})
    assert res["_rc"] != 0 and "mutually exclusive: file|experiment" in res["msg"], res["msg"]
