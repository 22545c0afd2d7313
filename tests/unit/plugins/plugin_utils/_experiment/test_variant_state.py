# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""variant_state: which variant a host runs at a position, and its record and the host's halt."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import variant_state as vs

VARIANTS = [{"name": "a", "engine": "sglang", "speculative": None, "fingerprint": "fa"},
            {"name": "b", "engine": "vllm", "speculative": "eagle_drafter", "fingerprint": "fb"}]
EXPERIMENT = {"variants": VARIANTS, "todo": {"h1": ["a", "b"], "h2": ["b"]}}
RELEASE = {"gpus": [{"index": 0, "free": True}, {"index": 1, "free": False}], "gpus_selected": [0, 1],
           "killed": [{"pid": 5}], "elapsed": 0.4}


def test_pick_runs_the_host_own_variants_in_order_and_nothing_past_its_end():
    assert vs.pick(EXPERIMENT, "h2", 0)["variant"]["name"] == "b"
    step = vs.pick(EXPERIMENT, "h1", 1)
    assert step["run"] and step["skipped"] is None and step["variant"]["name"] == "b"
    assert step["record"] is None  # none until it ends: a failure, or its measurement
    past = vs.pick(EXPERIMENT, "h2", 1)
    assert past["variant"] is None and not past["run"] and past["skipped"] is None
    assert vs.pick(EXPERIMENT, "h3", 0)["variant"] is None


def test_the_picked_variant_carries_its_fingerprint_on_that_host_into_its_record():
    experiment = dict(EXPERIMENT, host_fingerprints={"h1": {"b": "fb-on-h1"}})
    variant = vs.pick(experiment, "h1", 1)["variant"]
    assert variant["fingerprint"] == "fb-on-h1" and VARIANTS[1]["fingerprint"] == "fb"
    assert vs.close({"variant": "b", "outcome": "ok"}, variant, "h1")["record"]["fingerprint"] == "fb-on-h1"
    assert vs.pick(experiment, "h2", 0)["variant"]["fingerprint"] == "fb"  # no host fingerprint: its own


def test_a_halted_host_records_its_next_variant_as_skipped_with_the_reason():
    step = vs.pick(EXPERIMENT, "h1", 1, halt="GPUs not verified free after a")
    assert not step["run"]
    assert step["skipped"] == {"variant": "b", "engine": "vllm", "speculative": True, "outcome": "skipped",
                               "stage": "skipped", "reason": "GPUs not verified free after a"}


def test_the_stop_proves_the_gpus_free_only_without_error_and_over_every_gpu():
    assert vs.stop_verified({"all_gpus": True, "release": RELEASE})
    assert not vs.stop_verified({"all_gpus": True}, "timed out")
    assert not vs.stop_verified({"all_gpus": False})
    assert not vs.stop_verified({}) and not vs.stop_verified(None)


def test_close_takes_the_stop_evidence_or_the_check_after_it():
    record = {"variant": "a", "outcome": "ok", "stage": "done", "reason": ""}
    closed = vs.close(record, VARIANTS[0], "h1", teardown={"all_gpus": True, "release": RELEASE})
    assert closed["halt"] == ""
    full = closed["record"]
    assert (full["engine"], full["speculative"], full["fingerprint"], full["host"]) == ("sglang", False, "fa", "h1")
    assert (full["teardown"]["gpus_free"], full["teardown"]["gpus_used"], full["teardown"]["killed"]) == (1, [1], 1)
    # The stop failed: its release is not evidence; the check after it is.
    closed = vs.close(record, VARIANTS[0], "h1", teardown={"all_gpus": True, "release": RELEASE},
                      release={"gpus": [{"index": 0, "free": True}]}, stop_error="timed out")
    assert closed["record"]["teardown"]["gpus_free"] == 1 and closed["record"]["teardown"]["gpus_used"] == []
    assert closed["record"]["teardown"]["stop_error"] == "timed out"


def test_a_variant_that_did_not_fail_is_recorded_ok_with_its_run_and_server():
    run, server = {"levels": [1]}, {"base_url": "http://h1:30000", "ready_seconds": 2.5}
    full = vs.close(None, VARIANTS[0], "h1", runs={"a": run, "b": {}}, server=server)["record"]
    assert (full["variant"], full["outcome"], full["stage"], full["reason"]) == ("a", "ok", "done", "")
    assert full["bench"] == run and full["server"] == server and full["host"] == "h1"
    # Nothing measured for it: failed at the benchmark, naming the variant.
    for runs in ({"b": run}, None):
        full = vs.close(None, VARIANTS[0], "h1", runs=runs, server=server)["record"]
        assert (full["outcome"], full["stage"]) == ("failed", "benchmark") and "for a" in full["reason"]
    assert "bench" not in full


def test_a_failure_with_kept_servers_halts_the_host_and_a_halt_stays():
    failed = {"variant": "b", "outcome": "failed", "stage": "benchmark", "reason": "x"}
    closed = vs.close(failed, VARIANTS[1], "h1", kept=True)
    assert closed["halt"] == "b failed at stage benchmark and servers are kept, so the next variants were not launched"
    assert closed["record"]["teardown"]["kept"] is True
    assert vs.close(failed, VARIANTS[1], "h1", halt="earlier")["halt"] == "earlier"
    assert vs.close(dict(failed, outcome="ok"), VARIANTS[1], "h1", kept=True)["halt"] == ""


def test_a_stand_by_slot_runs_nothing_and_the_group_comes_at_the_same_position():
    experiment = dict(EXPERIMENT, slots={"h1": ["b", "a"], "h2": ["b", None]})
    assert vs.pick(experiment, "h2", 0)["variant"]["name"] == "b" and vs.pick(experiment, "h1", 0)["run"]
    stand_by = vs.pick(experiment, "h2", 1)
    assert stand_by["variant"] is None and not stand_by["run"] and stand_by["skipped"] is None


GROUP = {"nodes": ["h1", "h2"], "rank": 0, "node": "h1"}


def test_a_group_is_measured_at_rank_0_and_its_other_nodes_say_where():
    variant = dict(VARIANTS[0], server={"tp_size": 16})
    runs = {"a": {"levels": [{"concurrency": 1}]}}
    at_0 = vs.measured(variant, runs, {"group": GROUP}, "h1")
    assert at_0["bench"] == runs["a"] and "measured_at" not in at_0
    assert at_0["topology"] == {"nodes": ["h1", "h2"], "nnodes": 2, "tp_size": 16, "pp_size": 1, "dp_size": 1, "ep_size": 1}
    # the sizes are the launched server's (the server_spec dict), as the engine reads its extra_args
    piped = vs.measured(variant, runs, {"group": GROUP, "tp_size": 8, "extra_args": ["--pp-size", "2"]}, "h1")
    assert (piped["topology"]["tp_size"], piped["topology"]["pp_size"]) == (8, 2)
    at_1 = vs.measured(variant, {}, {"group": dict(GROUP, rank=1, node="h2")}, "h2")
    assert (at_1["outcome"], at_1["bench"], at_1["measured_at"]) == ("ok", {}, "h1")
    alone = vs.measured(dict(VARIANTS[0], server={}), runs, {"group": None}, "h3")
    assert alone["topology"] == {"nodes": ["h3"], "nnodes": 1, "tp_size": 1, "pp_size": 1, "dp_size": 1, "ep_size": 1}
    assert vs.measured_here({"group": None}) and vs.measured_here({"group": GROUP})
    assert not vs.measured_here({"group": dict(GROUP, rank=1)})
    assert vs.node_result({"group": GROUP}, "h1") == {}
    assert vs.node_result({"group": dict(GROUP, rank=1)}, "h2") == {
        "at_rank_0": "h1", "line": "h2: node of the server at h1 (rank 0), measured there"}
