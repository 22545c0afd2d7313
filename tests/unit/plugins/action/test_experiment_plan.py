# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The experiment_plan action run by `ansible` on localhost: a given experiment's variants assigned
to the host, nothing recorded yet; a file and an experiment together are refused; a variant's
fingerprint on each host covers the server settings that host's variables give it."""

from __future__ import annotations

import json

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from tests.support.ansible import run_module, run_playbook

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


def test_a_changed_group_variable_that_reaches_the_command_line_runs_the_variant_again(tmp_path):
    """The fingerprint covers the server settings the inventory gives each host: a group variable
    that the model path is templated from changes, so a variant recorded before runs again."""
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[gpu]\nh1 ansible_connection=local\nh2 ansible_connection=local sglang_server_tp_size=4\n"
                         "[gpu:vars]\nsglang_server_model_path=\"{{ models_dir }}/kimi\"\nmodels_dir=/models/a\n")
    playbook = tmp_path / "plan.yml"
    plan_task = {"gpufleet.serving.experiment_plan": {
        "experiment": {"reference": "base", "benchmark": {"levels": [1]},
                       "variants": [{"name": "base", "engine": "sglang"}]},
        "hosts": "{{ ansible_play_hosts_all }}", "results_dir": str(tmp_path / "results")},
        "register": "plan", "run_once": True, "delegate_to": "localhost"}
    save = {"ansible.builtin.copy": {"content": "{{ plan | to_json }}", "dest": str(tmp_path / "plan.json"),
                                     "mode": "0644"}, "run_once": True, "delegate_to": "localhost"}
    playbook.write_text(json.dumps([{"hosts": "gpu", "gather_facts": False, "tasks": [plan_task, save]}]))

    def planned(**extra):
        proc = run_playbook(playbook, extra_vars=extra, inventory=str(inventory), connection=None)
        assert proc.returncode == 0, proc.stdout[-3000:]
        return json.loads((tmp_path / "plan.json").read_text())

    first = planned()
    prints = first["host_fingerprints"]
    assert prints["h1"]["base"] != prints["h2"]["base"]  # h2's tp_size reaches its command line
    for host in ("h1", "h2"):
        store.write_record(first["record_files"][host]["base"], {
            "variant": "base", "outcome": "ok", "host": host, "fingerprint": prints[host]["base"],
            "bench": {"levels": [{"concurrency": 1, "output_tok_s": 60.0}]}})
    assert planned()["recorded"] == {"h1": ["base"], "h2": ["base"]}
    moved = planned(models_dir="/models/b")
    assert moved["recorded"] == {"h1": [], "h2": []} and moved["todo"] == {"h1": ["base"], "h2": ["base"]}
    assert moved["rerun"] == {"h1": ["base"], "h2": ["base"]}
