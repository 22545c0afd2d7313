# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""filter/fleet.py: every filter registered and documented in its sidecar, and the wrappers that turn a
bad input's ValueError into the filter's error (the logic behind the filters: plugin_utils/_report/ and
_experiment/, tested there)."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from jinja2 import Environment

from ansible_collections.gpufleet.serving.plugins.filter.fleet import FilterModule
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import engine_settings as es

FILTER_DIR = pathlib.Path(__file__).resolve().parents[4] / "plugins" / "filter"


# --- engine_settings: the playbooks' engine, checked once --------------------------------------

def test_engine_settings_default_sglang():
    spec = es.engine_settings("")
    assert spec == es.engine_settings("sglang")
    assert (spec["name"], spec["title"], spec["role"]) == ("sglang", "SGLang", "gpufleet.serving.sglang_server")
    assert (spec["result_fact"], spec["teardown_fact"]) == ("sglang_server_result", "sglang_server_teardown")
    assert (spec["label"], spec["eagle_label"]) == ("sglang", "sglang+eagle3")
    assert (spec["url"], spec["instance"]) == ("http://127.0.0.1:30000", "sglang-30000")


def test_engine_settings_vllm_with_the_servers_variables():
    spec = es.engine_settings("vllm", "10.0.0.5", "8100")
    assert (spec["role"], spec["vars_prefix"]) == ("gpufleet.serving.vllm_server", "vllm_server_")
    assert (spec["result_fact"], spec["eagle_label"]) == ("vllm_server_result", "vllm+eagle3")
    assert (spec["url"], spec["instance"]) == ("http://10.0.0.5:8100", "vllm-8100")
    assert es.engine_settings("vllm")["url"] == "http://127.0.0.1:8000"  # the role's default port
    assert es.engine_settings("vllm", "::1", 8000, "mine")["url"] == "http://[::1]:8000"
    assert es.engine_settings("vllm", instance="mine")["instance"] == "mine"


@pytest.mark.parametrize("name", ["tgi", "SGLang", "any"])
def test_engine_settings_refuses_another_engine(name):
    with pytest.raises(ValueError, match="engine must be one of %s, not '%s'" % (", ".join(sorted(registry.names())), name)):
        es.engine_settings(name)


def test_engine_settings_filter_raises_the_filter_error():
    env = Environment()
    env.filters.update(FilterModule().filters())
    with pytest.raises(AnsibleFilterError, match="engine must be one of"):
        env.from_string("{{ 'tgi' | engine_settings }}").render()
    assert env.from_string("{{ ('vllm' | engine_settings('h', 9)).url }}").render() == "http://h:9"


# --- the plugin ------------------------------------------------------------------------------

def test_every_filter_is_documented_in_its_sidecar():
    filters = FilterModule().filters()
    sidecars = {p.stem for p in FILTER_DIR.glob("*.yml")}
    assert sidecars == set(filters)
    for name in filters:
        doc = yaml.safe_load((FILTER_DIR / (name + ".yml")).read_text())
        assert doc["DOCUMENTATION"]["name"] == name
        assert set(doc) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}
        assert "gpufleet.serving." + name in doc["EXAMPLES"]


# --- variants and experiments ------------------------------------------------------------

def test_teardown_record_from_a_release_from_none_and_of_a_kept_server():
    release = {"gpus_selected": [0, 1], "gpus": [{"index": 0, "free": True}, {"index": 1, "free": False}, {"index": 2}],
               "killed": [{"pid": 7}], "elapsed": 1.25}
    assert o_teardown(release, "GPU 1 busy", "") == {
        "verified": False, "kept": False, "stop_error": "", "gpus_selected": 2, "gpus_free": 1, "gpus_used": [1],
        "killed": 1, "seconds": 1.25}
    assert o_teardown({}, "", "stop failed") == {
        "verified": True, "kept": False, "stop_error": "stop failed", "gpus_selected": 0, "gpus_free": 0,
        "gpus_used": [], "killed": 0, "seconds": None}
    # A server left running was neither released nor verified.
    kept = o_teardown({}, "", "", True)
    assert kept["kept"] is True and kept["verified"] is False and kept["killed"] == 0


def o_teardown(release, halt, error, kept=False):
    return FilterModule().filters()["teardown_record"](release, halt, error, kept)


def test_experiment_plan_lines_mark_what_runs_and_what_is_recorded():
    planned = [{"variant": "tp8", "engine": "sglang", "gpus": "all", "env": {}, "running": True,
                "argv": ["/opt/sglang", "serve", "--model-path", "/m x"]},
               {"variant": "ep8", "engine": "sglang", "gpus": [0, 1], "env": {"CUDA_VISIBLE_DEVICES": "0,1"},
                "argv": ["/opt/sglang", "serve"]}]
    lines = FilterModule().filters()["experiment_plan_lines"](
        planned, "h1", {"name": "glm", "todo": {"h1": ["ep8"]}, "recorded": {"h1": ["tp8"]}})
    assert lines == ["h1: 2 variant(s) of glm, 1 to run",
                     "1. tp8 [skip, recorded] sglang on all GPUs; a server runs there now (it is torn down first)",
                     "   /opt/sglang serve --model-path '/m x'",
                     "2. ep8 [run] sglang on GPUs 0,1",
                     "   /opt/sglang serve"]


def test_swap_gates_checks_the_names_before_anything_runs():
    swap_gates = FilterModule().filters()["swap_gates"]
    assert swap_gates(None, {"min_speedup": 1.5}) == []
    with pytest.raises(AnsibleFilterError, match=r"swap_gates.min_accept: unknown gate; the gates: min_acceptance"):
        swap_gates(None, {"min_accept": 2})
    with pytest.raises(AnsibleFilterError, match=r"swap_gates.max_failed_requests: must be a whole number"):
        swap_gates(None, {"max_failed_requests": -1})


def test_experiment_planned_zips_servers_plans_and_names_in_order():
    requests = [{"engine": "sglang", "gpus": [], "instance": "a"},
                {"engine": "vllm", "gpus": [0, 1], "instance": "b"}]
    plans = [{"argv": ["sglang", "serve"], "running": True, "decision": "keep"},
             {"argv": ["vllm", "serve"], "running": False, "decision": "relaunch"}]
    planned = FilterModule().filters()["experiment_planned"](requests, plans, ["tp8", "ep8"])
    assert [(p["variant"], p["engine"], p["gpus"], p["argv"], p["running"]) for p in planned] == [
        ("tp8", "sglang", "all", ["sglang", "serve"], True), ("ep8", "vllm", [0, 1], ["vllm", "serve"], False)]
    assert planned[1]["composed"] is plans[1]
    with pytest.raises(AnsibleFilterError, match="2 servers, 1 composed plans and 2 variants"):
        FilterModule().filters()["experiment_planned"](requests, plans[:1], ["tp8", "ep8"])


def test_server_topology_reads_the_spec_and_refuses_what_is_not_one():
    topology = FilterModule().filters()["server_topology"]
    spec = {"engine": "vllm", "tp_size": 8, "nodes": ["a", "b"], "extra_args": ["-ep"]}
    assert topology(spec) == {"nodes": ["a", "b"], "nnodes": 2, "tp_size": 8, "pp_size": 1, "dp_size": 1, "ep_size": 8}
    with pytest.raises(AnsibleFilterError, match="server_spec lookup's dict"):
        topology({"tp_size": 8})


def test_server_steps_plans_first_when_the_choice_refuses_and_goes_straight_on_with_a_known_plan():
    steps = FilterModule().filters()["server_steps"]
    settings = {"state": "started", "model_path": "", "vars_prefix": "sglang_server_", "api_key": "", "nodes": []}
    # No model path: the choice would refuse it; plan.yml's own task does, naming the variable.
    assert [s["file"] for s in steps(settings, inputs={"service_mgr": ""})] == ["plan.yml", "steps.yml"]
    with pytest.raises(AnsibleFilterError, match="server_steps"):
        steps({"nodes": []}, plan={"supervisor": "process"})
