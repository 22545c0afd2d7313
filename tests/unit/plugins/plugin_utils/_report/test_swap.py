# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/swap.py: swap_to_eagle.yml's records of a host - the server a failure left (from facts,
never from task names), the first record, the figures, the gates and the rollback - each with its line."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import swap

RUNS = {
    "baseline": {"summary": {"single_stream_tok_s": 60.04, "peak_tok_s": 2370.0, "accept_length": None}},
    "candidate": {"summary": {"single_stream_tok_s": 121.5, "peak_tok_s": 2500.26, "accept_length": 2.345}},
}


def failure(stage, unreachable=False):
    return {"host": "h1", "outcome": "failed", "stage": stage, "unreachable": unreachable, "reason": "x: y"}


@pytest.mark.parametrize("stage", ["start", "baseline", "eagle", "eagle_benchmark"])
def test_server_left_unknown_when_the_host_is_lost(stage):
    assert swap.server_left(failure(stage, unreachable=True), {"changed": False}, {"speculative": True}) \
        == swap.SERVER_LOST


@pytest.mark.parametrize("stage", ["start", "baseline"])
def test_server_left_base_before_the_eagle_stage(stage):
    assert swap.server_left(failure(stage)) == swap.SERVER_BASE


def test_server_left_base_when_the_drafter_check_failed_or_never_ran():
    assert swap.server_left(failure("eagle"), {"failed": True, "msg": "hidden size"}) == swap.SERVER_BASE
    assert swap.server_left(failure("eagle"), None) == swap.SERVER_BASE


def test_server_left_maybe_none_once_the_drafter_check_passed():
    # e.g. the launch with the drafter failed after the base server was torn down.
    passed = {"changed": False, "drafter": {"hidden_size": 7168}}
    assert swap.server_left(failure("eagle"), passed, {"speculative": False}) == swap.SERVER_MAYBE_NONE


def test_server_left_eagle_when_the_eagle_benchmark_failed_on_the_eagle_server():
    passed = {"changed": False}
    assert swap.server_left(failure("eagle_benchmark"), passed, {"speculative": True}) == swap.SERVER_EAGLE
    assert swap.server_left(failure("eagle_benchmark"), passed, {"speculative": False}) == swap.SERVER_MAYBE_NONE
    assert swap.server_left(failure("eagle_benchmark"), passed, None) == swap.SERVER_MAYBE_NONE


def test_swap_start_pending_until_too_many_hosts_failed():
    ok, bad = {"outcome": "ok"}, {"outcome": "failed"}
    pending = swap.swap_start([None, {"outcome": "pending"}, ok, bad], "h3", 50)
    assert pending == {"host": "h3", "outcome": "pending", "stage": "start", "reason": ""}
    halted = swap.swap_start([ok, bad, bad, None], "h4", 50)
    assert halted["outcome"] == "not_started"
    assert halted["line"] == "h4: NOT_STARTED at stage start: more than 50% of the hosts done so far failed"
    # The default, 100, never stops; nothing done yet never stops.
    assert swap.swap_start([bad, bad], "h5")["outcome"] == "pending"
    assert swap.swap_start([None, {"outcome": "not_started"}], "h6", 0)["outcome"] == "pending"


def test_swap_record_and_its_line():
    record = swap.swap_record(RUNS, "h1", base_server={"ready_seconds": 31.234},
                              server={"ready_seconds": 40.5, "speculative": True},
                              teardown={"release_seconds": 1.234, "killed": 0,
                                        "drain": {"worker": "http://h1:30000", "drain_s": 1.5, "aborted": 0}})
    assert record["outcome"] == "ok" and record["stage"] == "done"
    assert record["drain"] == {"worker": "http://h1:30000", "drain_s": 1.5, "aborted": 0}
    assert record["eagle_tok_s"] == 121.5 and record["accept_length"] == 2.345
    assert record["line"] == (
        "h1: ok, single-stream 60.0 -> 121.5 tok/s, peak 2370.0 -> 2500.3 tok/s, accept length 2.35; "
        "teardown 1.23 s (0 processes signalled after the stop); EAGLE-3 ready in 40.50 s, "
        "base server ready in 31.23 s")


def test_swap_record_with_telemetry_and_health_names_the_best_tok_per_j_and_the_verdict():
    runs = {side: dict(run, levels=[{"output_tokens_per_joule": 0.5},
                                    {"output_tokens_per_joule": best, "throttled": side == "candidate"}])
            for (side, run), best in zip(RUNS.items(), (1.25, 2.5))}
    record = swap.swap_record(runs, "h1", server={"ready_seconds": 40.5, "health": {"verdict": "warn"}})
    assert (record["baseline_tok_per_j"], record["eagle_tok_per_j"], record["throttled"]) == (1.25, 2.5, True)
    assert "; best tok/J 1.250 -> 2.500 THROTTLED; GPU health warn;" in record["line"]


def test_swap_record_without_baseline_or_teardown():
    record = swap.swap_record({"candidate": RUNS["candidate"]}, "h2", base_server=None,
                              server={"ready_seconds": 9}, teardown=None)
    assert record["baseline_tok_s"] is None and record["release_seconds"] is None and record["drain"] is None
    assert record["line"] == (
        "h2: ok, single-stream - -> 121.5 tok/s, peak - -> 2500.3 tok/s, accept length 2.35; "
        "teardown - s (- processes signalled after the stop); EAGLE-3 ready in 9.00 s, base server kept running")


def test_swap_failure_adds_the_server_left_and_the_line():
    record = swap.swap_failure(dict(failure("eagle"), reason="Wait until ready: crashed"),
                               {"changed": False}, {"speculative": True})
    assert record["server_left"] == swap.SERVER_MAYBE_NONE
    assert record["line"] == ("h1: FAILED at stage eagle: Wait until ready: crashed; server left: "
                              + swap.SERVER_MAYBE_NONE)


@pytest.mark.parametrize("step, stage, swap_stage", [
    ("baseline", "launch", "baseline"), ("baseline", "benchmark", "baseline"),
    ("candidate", "launch", "eagle"), ("candidate", "benchmark", "eagle_benchmark")])
def test_swap_step_failure_names_the_stage_as_the_swap_does(step, stage, swap_stage):
    records = [{"variant": "baseline", "outcome": "ok", "stage": "done"}] if step == "candidate" else []
    records.append({"variant": step, "outcome": "failed", "stage": stage, "host": "h1", "unreachable": True,
                    "reason": "Wait until ready: crashed"})
    records.append({"variant": "candidate", "outcome": "skipped", "stage": "skipped", "reason": "halted"})
    got = swap.swap_step_failure(records, failure("gates"))
    assert got == {"host": "h1", "outcome": "failed", "stage": swap_stage, "unreachable": True,
                   "reason": "Wait until ready: crashed"}
    # The stage decides the server left: nothing was stopped before the EAGLE-3 launch.
    assert swap.swap_failure(got)["server_left"] == swap.SERVER_LOST
    assert swap.swap_failure(dict(got, unreachable=False), {"rc": 0})["rollback_needed"] is (step == "candidate")


def test_swap_step_failure_without_a_failed_step_is_the_rescue_s_failure():
    records = [{"variant": "baseline", "outcome": "ok"}, {"variant": "candidate", "outcome": "ok"}]
    assert swap.swap_step_failure(records, failure("gates")) == failure("gates")
    assert swap.swap_step_failure([], None) is None


GATE_RUNS = {
    "baseline": {"levels": [{"concurrency": 1, "output_tok_s": 50.0, "completed": 4, "failed": 0}]},
    "candidate": {"levels": [{"concurrency": 1, "output_tok_s": 100.0, "completed": 4, "failed": 0}]},
}


def test_swap_gates_on_the_eagle_run_against_the_base_run():
    (speedup,) = swap.swap_gates(GATE_RUNS, {"min_speedup": 2.5})
    assert (speedup["gate"], speedup["level"], speedup["value"], speedup["passed"]) == ("min_speedup", 1, 2.0, False)
    assert speedup["line"].startswith("min_speedup at concurrency 1 value 2.0, limit 2.5 (output tok/s")


def test_swap_rollback_needed_and_done():
    record = swap.swap_failure(failure("gates"), {"rc": 0}, {"speculative": True})
    assert record["server_left"] == swap.SERVER_EAGLE and record["rollback_needed"] is True
    assert swap.swap_failure(failure("baseline"))["rollback_needed"] is False
    back = swap.swap_rolled_back(record, {"ready_seconds": 4.372})
    assert back["rolled_back"] is True and back["rollback_needed"] is False
    assert back["line"].endswith("server left: base server (restored, ready in 4.37 s)")
    failed = swap.swap_rolled_back(record, None, "Launch: port busy")
    assert failed["rolled_back"] is False and "restoring the base server failed (Launch: port busy)" in failed["line"]


def test_names_in_swap_lines_show_as_text_and_the_records_keep_them():
    hostile = "c|1 `x` *b*\n<b>"
    level = {"concurrency": 1, "output_tok_s": 50.0, "completed": 4, "failed": 0,
             "categories": {hostile: {"requests": 4, "accept_length": 1.5}}}
    runs = {"baseline": {"levels": [level]}, "candidate": {"levels": [level]}}
    entry = swap.swap_gates(runs, {"per_category": {hostile: {"min_acceptance_length": 2.0}}})[0]
    assert hostile in entry["gate"] and r"c\|1 \`x\` \*b\* \<b\>" in entry["line"], entry
    failed = swap.swap_failure({"host": hostile, "outcome": "failed", "stage": "eagle", "reason": hostile})
    assert failed["host"] == failed["reason"] == hostile
    assert failed["line"].startswith(r"c\|1 \`x\` \*b\* \<b\>: FAILED at stage eagle: c\|1"), failed["line"]
