# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The playbooks' filters: decisions (server left, batch gate, reset outcome) and lines."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from jinja2 import Environment

from ansible_collections.gpufleet.serving.plugins.filter.fleet import FilterModule
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import engine_settings as es
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import closing, host_lines, reset, swap
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl

FILTER_DIR = pathlib.Path(__file__).resolve().parents[4] / "plugins" / "filter"

RUNS = {
    "baseline": {"summary": {"single_stream_tok_s": 60.04, "peak_tok_s": 2370.0, "accept_length": None}},
    "candidate": {"summary": {"single_stream_tok_s": 121.5, "peak_tok_s": 2500.26, "accept_length": 2.345}},
}


# --- server_left: from facts, never from task names ------------------------------------

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


# --- failure_reason ------------------------------------------------------------------------

def test_failure_reason_names_the_task_and_its_message():
    assert closing.failure_reason({"msg": "  boom \n"}, {"name": "Wait until ready"}, {"ping": "pong"}) \
        == "Wait until ready: boom"
    assert closing.failure_reason({}, None, None) == "?: failed"


def test_failure_reason_unreachable_from_the_ping():
    ping = {"unreachable": True, "msg": "Failed to connect to the host via ssh: refused\n"}
    assert closing.failure_reason({"msg": "x"}, {"name": "T"}, ping) \
        == "unreachable: Failed to connect to the host via ssh: refused"


# --- swap_to_eagle records and lines -------------------------------------------------------

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
                           teardown={"release_seconds": 1.234, "killed": 0})
    assert record["outcome"] == "ok" and record["stage"] == "done"
    assert record["eagle_tok_s"] == 121.5 and record["accept_length"] == 2.345
    assert record["line"] == (
        "h1: ok, single-stream 60.0 -> 121.5 tok/s, peak 2370.0 -> 2500.3 tok/s, accept length 2.35; "
        "teardown 1.23 s (0 processes signalled after the stop); EAGLE-3 ready in 40.50 s, "
        "base server ready in 31.23 s")


def test_swap_record_without_baseline_or_teardown():
    record = swap.swap_record({"candidate": RUNS["candidate"]}, "h2", base_server=None,
                           server={"ready_seconds": 9}, teardown=None)
    assert record["baseline_tok_s"] is None and record["release_seconds"] is None
    assert record["line"] == (
        "h2: ok, single-stream - -> 121.5 tok/s, peak - -> 2500.3 tok/s, accept length 2.35; "
        "teardown - s (- processes signalled after the stop); EAGLE-3 ready in 9.00 s, base server kept running")


def test_swap_failure_adds_the_server_left_and_the_line():
    record = swap.swap_failure(dict(failure("eagle"), reason="Wait until ready: crashed"),
                            {"changed": False}, {"speculative": True})
    assert record["server_left"] == swap.SERVER_MAYBE_NONE
    assert record["line"] == ("h1: FAILED at stage eagle: Wait until ready: crashed; server left: "
                              + swap.SERVER_MAYBE_NONE)


def test_swap_line_of_a_failure_without_server_left():
    assert host_lines.swap_line({"host": "h", "outcome": "failed", "stage": "base", "reason": "T: m"}) \
        == "h: FAILED at stage base: T: m"


# --- the other playbooks' lines ---------------------------------------------------------------

def test_base_line():
    server = {"base_url": "http://127.0.0.2:30000", "relaunched": True, "ready_seconds": 12.0}
    assert host_lines.base_line("h", server, {"release_seconds": 2.5}, {"summary": {"peak_tok_s": 99.96}}) == (
        "h: ok, base server at http://127.0.0.2:30000 relaunched, ready in 12.00 s; "
        "the previous server's teardown took 2.50 s; peak 100.0 tok/s")
    kept = dict(server, relaunched=False)
    assert host_lines.base_line("h", kept, {"release_seconds": 2.5}, None) == \
        "h: ok, base server at http://127.0.0.2:30000 kept running (already the base server)"


def test_bench_line():
    run = {"summary": {"single_stream_tok_s": None, "peak_tok_s": 10, "peak_concurrency": 4,
                       "accept_length": 1.5, "failed": 0}}
    assert host_lines.bench_line("h", "http://u", run) == \
        "h: ok, http://u: single-stream - tok/s, peak 10.0 tok/s at 4, accept length 1.50, 0 failed requests"
    assert host_lines.bench_line("h", "http://u", error=" refused\n") == "h: FAILED, http://u: refused"


@pytest.mark.parametrize("workload, accept, warned", [
    (None, 2.1, True),  # a result without `workload` measured random prompts
    ({"source": "random"}, 2.1, True),
    ({"source": "builtin", "name": "mixed"}, 2.1, False),
    ({"source": "random"}, None, False),  # no acceptance measured: nothing to warn about
])
def test_bench_line_warns_of_acceptance_on_random_prompts(workload, accept, warned):
    summary = {"single_stream_tok_s": 9.0, "peak_tok_s": 10.0, "peak_concurrency": 1, "accept_length": accept,
               "failed": 0}
    run = {"levels": [{"concurrency": 1}], "summary": summary}
    if workload is not None:
        run["workload"] = workload
    line = host_lines.bench_line("h", "http://u", run)
    assert line.startswith("h: ok, http://u: single-stream 9.0 tok/s")
    assert line.endswith("; " + wl.RANDOM_LINE) is warned


def test_launch_and_teardown_lines():
    # scripts/demo.sh reads "relaunched, ready after S s".
    assert host_lines.launch_line("h", {"base_url": "http://a", "relaunched": True, "ready_seconds": 3}) \
        == "h: http://a relaunched, ready after 3.00 s"
    assert host_lines.launch_line("h", {"base_url": "http://a", "relaunched": False}) \
        == "h: http://a kept running (healthy, same configuration)"
    assert host_lines.teardown_line("h", {"stopped": True, "release_seconds": 0.5, "killed": 2}, "sglang-30000") == (
        "h: stopped sglang-30000 (was running: True); GPUs verified free after 0.50 s, "
        "2 processes signalled by the release")


# --- the controller's report ----------------------------------------------------------------

def test_teardown_line_names_the_processes_vllm_server_killed():
    teardown = {"stopped": False, "release_seconds": 0.25, "killed": 3,
                "killed_titles": ["VLLM::EngineCore", "VLLM::Worker_TP0", "/opt/vllm/bin/python -m x"]}
    assert host_lines.teardown_line("h", teardown, "vllm-8000") == (
        "h: stopped vllm-8000 (was running: False); GPUs verified free after 0.25 s, 3 processes signalled "
        "by the release (VLLM::EngineCore, VLLM::Worker_TP0, python -m x)")


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


def test_report_lines_and_not_ok():
    results = [{"host": "b", "outcome": "failed", "line": "b: FAILED"}, {"host": "a", "outcome": "ok", "line": "a: ok"}]
    report = {"json_path": "/r/benchmark.json", "markdown_path": "/r/benchmark.md", "plot_path": None}
    assert closing.report_lines(results, ["c"], report=report, summary_file="/r/swap_summary.json") == [
        "report: /r/benchmark.json, /r/benchmark.md", "summary: /r/swap_summary.json",
        "a: ok", "b: FAILED", "c: " + closing.NO_RESULT]
    assert closing.report_lines(results, [], report={})[0] == "report: none (no host completed)"
    assert closing.report_lines(results, [])[0] == "a: ok"
    assert closing.not_ok(results, ["c"]) == ["b", "c"]
    assert closing.not_ok([{"host": "a", "outcome": "clean"}], [], ok="clean") == []


# --- reset.yml ---------------------------------------------------------------------------

RELEASE = {
    "elapsed": 1.5,
    "killed": [{"cmdline": "sglang::scheduler_TP0", "signals": ["SIGTERM"]},
               {"cmdline": "python -m sglang.launch_server " + "x" * 100, "signals": ["SIGTERM", "SIGKILL"]}],
    "gpus": [{"index": 0, "free": True}, {"index": 1, "free": True}],
    "protected_holders": [{"cmdline": "nvidia-persistenced"}],
}


def test_reset_summary_of_a_clean_host():
    r = reset.reset_summary(RELEASE, "h1")
    assert r["outcome"] == "clean" and r["reason"] == ""
    assert (r["killed"], r["sigkilled"], r["gpus_selected"], r["gpus_free"]) == (2, 1, 2, 2)
    assert r["protected_holders"] == ["nvidia-persistenced"]
    assert r["seconds"] == 1.5
    # As Jinja's truncate(80) cut the command lines.
    jinja = Environment().from_string("{{ s | truncate(80) }}")
    assert r["killed_commands"] == [jinja.render(s=k["cmdline"]) for k in RELEASE["killed"]]
    assert "failed_to_kill" not in r


def test_reset_summary_drops_the_interpreters_directory():
    # What was killed must survive the cut, however deep the interpreter lives.
    cmd = "/" + "d/" * 40 + "python3 -c from multiprocessing.resource_tracker import main;main(7)"
    release = dict(RELEASE, killed=[{"cmdline": cmd, "signals": ["SIGKILL"]}])
    (line,) = reset.reset_summary(release, "h1")["killed_commands"]
    assert line == "python3 -c from multiprocessing.resource_tracker import main;main(7)"
    assert reset.reset_summary(dict(RELEASE, killed=[{"cmdline": "/" + "d/" * 60 + "x"}]), "h1")["killed_commands"] == ["x"]


def test_reset_summary_of_a_dirty_host_takes_the_failed_release():
    failed = dict(RELEASE, failed=True, msg="GPU 1: 2048 MiB used\n",
                  gpus=[{"index": 0, "free": True}, {"index": 1, "free": False}, {"index": 2}],
                  failed_to_kill=[{"cmdline": "stuck"}, {}])
    r = reset.reset_summary(failed, "h2", failure=failed)
    assert r["outcome"] == "dirty" and r["reason"] == "GPU 1: 2048 MiB used"
    assert r["gpus_used"] == [1] and r["gpus_free"] == 1 and r["gpus_selected"] == 3
    assert r["failed_to_kill"] == ["stuck", "?"]


def test_reset_summary_of_an_unreachable_host():
    lost = {"unreachable": True, "msg": "ssh: refused"}
    r = reset.reset_summary(lost, "h3", failure={"failed": True, "msg": "unreachable: ssh: refused"}, unreachable=True)
    assert r["outcome"] == "unreachable" and r["reason"] == "unreachable: ssh: refused"
    assert (r["killed"], r["gpus_selected"], r["seconds"]) == (0, 0, None)
    assert reset.reset_summary({}, "h4", failure={"unreachable": True, "msg": "x"})["outcome"] == "unreachable"


def test_reset_table():
    clean = reset.reset_summary(RELEASE, "h1")
    dirty = dict(clean, host="h0", outcome="dirty", reason="GPU 3 busy", gpus_selected=0, seconds=None)
    lines = reset.reset_table([clean, dirty], ["h9"])
    assert lines[0] == reset.RESET_HEADER
    assert lines[1] == "%-14s %-11s %8s %9s %8s  %s" % ("h0", "dirty", 2, "-", "-", "GPU 3 busy")
    row = ("h1", "clean", 2, "2/2", "1.50", "SIGKILL: 1; protected: nvidia-persistenced")
    assert lines[2] == "%-14s %-11s %8s %9s %8s  %s" % row
    assert lines[3].split()[:2] == ["h9", "no"] and lines[3].endswith("the host left the play (see above)")


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


@pytest.mark.parametrize("step, stage, swap_stage", [
    ("baseline", "launch", "baseline"), ("baseline", "benchmark", "baseline"),
    ("candidate", "launch", "eagle"), ("candidate", "benchmark", "eagle_benchmark")])
def test_swap_step_failure_names_the_stage_as_the_swap_does(step, stage, swap_stage):
    records = [{"variant": "baseline", "outcome": "ok", "stage": "done"}] if step == "candidate" else []
    records.append({"variant": step, "outcome": "failed", "stage": stage, "host": "h1", "unreachable": True,
                    "reason": "Wait until ready: crashed"})
    records.append({"variant": "candidate", "outcome": "skipped", "stage": "skipped", "reason": "halted"})
    got = FilterModule().filters()["swap_step_failure"](records, failure("gates"))
    assert got == {"host": "h1", "outcome": "failed", "stage": swap_stage, "unreachable": True,
                   "reason": "Wait until ready: crashed"}
    # The stage decides the server left: nothing was stopped before the EAGLE-3 launch.
    assert swap.swap_failure(got)["server_left"] == swap.SERVER_LOST
    assert swap.swap_failure(dict(got, unreachable=False), {"rc": 0})["rollback_needed"] is (step == "candidate")


def test_swap_step_failure_without_a_failed_step_is_the_rescue_s_failure():
    records = [{"variant": "baseline", "outcome": "ok"}, {"variant": "candidate", "outcome": "ok"}]
    assert swap.swap_step_failure(records, failure("gates")) == failure("gates")
    assert swap.swap_step_failure([], None) is None


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


GATE_RUNS = {
    "baseline": {"levels": [{"concurrency": 1, "output_tok_s": 50.0, "completed": 4, "failed": 0}]},
    "candidate": {"levels": [{"concurrency": 1, "output_tok_s": 100.0, "completed": 4, "failed": 0}]},
}


def test_swap_gates_checks_the_names_before_anything_runs():
    swap_gates = FilterModule().filters()["swap_gates"]
    assert swap_gates(None, {"min_speedup": 1.5}) == []
    with pytest.raises(AnsibleFilterError, match=r"swap_gates.min_accept: unknown gate; the gates: min_acceptance"):
        swap_gates(None, {"min_accept": 2})
    with pytest.raises(AnsibleFilterError, match=r"swap_gates.max_failed_requests: must be a whole number"):
        swap_gates(None, {"max_failed_requests": -1})


def test_swap_gates_on_the_eagle_run_against_the_base_run():
    (speedup,) = FilterModule().filters()["swap_gates"](GATE_RUNS, {"min_speedup": 2.5})
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
