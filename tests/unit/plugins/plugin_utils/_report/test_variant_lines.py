# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/variant_lines.py: a variant's teardown record from gpu_release's result, the planned
entries zipped from server_plan's batch, and the plan a host prints before anything runs."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import variant_lines as vl

RELEASE = {"gpus_selected": [0, 1, 2], "killed": [{"pid": 10}, {"pid": 11}], "elapsed": 1.5,
           "gpus": [{"index": 0, "free": True}, {"index": 1, "free": False}, {"index": 2, "free": True}, {"index": 3}]}


def test_the_teardown_record_counts_free_used_and_killed():
    assert vl.teardown_record(RELEASE) == {"verified": True, "kept": False, "stop_error": "", "gpus_selected": 3,
                                           "gpus_free": 2, "gpus_used": [1], "killed": 2, "seconds": 1.5}
    halted = vl.teardown_record(RELEASE, halt="GPUs not verified free", stop_error="stop failed")
    assert halted["verified"] is False and halted["stop_error"] == "stop failed"
    kept = vl.teardown_record(None, kept=True)
    assert (kept["verified"], kept["kept"], kept["gpus_selected"], kept["seconds"]) == (False, True, 0, None)


def test_the_plan_block_has_every_host_in_order_once():
    plans = {"h2": ["h2: 1 variant(s) of exp, 1 to run", "1. a [run] sglang on all GPUs", "   sglang"],
             "h1": ["h1: 0 variant(s) of exp, 0 to run"], "h3": None}
    assert vl.plan_block(plans, ["h1", "h2", "h3", "h4"]) == [
        "h1: 0 variant(s) of exp, 0 to run", "h2: 1 variant(s) of exp, 1 to run", "1. a [run] sglang on all GPUs",
        "   sglang", "h3: no plan (its error is above)", "h4: no plan (its error is above)"]


def test_the_plan_lines_say_run_or_skip_the_gpus_and_the_command_line():
    plans = [{"variant": "base", "engine": "sglang", "gpus": [0, 1], "argv": ["sglang", "serve", "--model-path", "/m x"],
              "running": True},
             {"variant": "eagle", "engine": "sglang", "gpus": None, "argv": ["sglang"],
              "composed": {}, "env": {"CUDA_VISIBLE_DEVICES": "4,5"}},
             {"variant": "other", "engine": "vllm", "gpus": None, "argv": []}]
    plans[1]["env"] = {"CUDA_VISIBLE_DEVICES": "4,5"}
    lines = vl.plan_lines(plans, "h1", {"name": "exp", "todo": {"h1": ["base"]}, "recorded": {"h1": ["eagle"]}})
    assert lines == ["h1: 3 variant(s) of exp, 1 to run",
                     "1. base [run] sglang on GPUs 0,1; a server runs there now (it is torn down first)",
                     "   sglang serve --model-path '/m x'",
                     "2. eagle [skip, recorded] sglang on GPUs 4,5",
                     "   sglang",
                     "3. other [skip] vllm on all GPUs",
                     "   "]
