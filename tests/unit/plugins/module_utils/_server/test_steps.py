# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/steps.py: the task files of the _server role, in order, for each path; and that each exists."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._server import steps

TASKS = os.path.join(os.path.dirname(__file__), *[os.pardir] * 5, "roles", "_server", "tasks")

SETTINGS = {"state": "started", "api_key": "", "tested_version": "0.5.23", "nodes": []}
PLAN = {"supervisor": "process", "running": True, "keep": False, "dirs_ready": True, "engine_version": "0.5.23",
        "entry_point_exists": True, "paths": {"redactor": "/var/lib/gf/log_redact.py"}, "launch_argv": ["sglang", "serve"],
        "dirs": [{"path": "/var/log/gf", "mode": "0750"}, {"path": "/var/lib/gf", "mode": "0700"}]}
RELAUNCH = ["stop_process.yml", "teardown_facts.yml", "start_process.yml", "wait.yml", "facts.yml"]


def settings(**more):
    return dict(SETTINGS, **more)


def plan(**more):
    return dict(PLAN, **more)


def test_a_relaunch_stops_starts_waits_and_records():
    assert steps.after_plan(settings(), plan()) == RELAUNCH


def test_gpus_just_proven_free_and_nothing_running_skip_the_teardown():
    assert steps.after_plan(settings(), plan(running=False), verified_free=True) == RELAUNCH[2:]
    # Something of the instance runs: the teardown stays, whatever the caller proved.
    assert steps.after_plan(settings(), plan(), verified_free=True) == RELAUNCH


@pytest.mark.parametrize("more, version", [({"entry_point_exists": False}, True), ({"engine_version": "0.6.0"}, True),
                                           ({"engine_version": None}, False), ({"entry_point_exists": None}, False)])
def test_the_version_check_runs_first_only_when_it_fails_or_warns(more, version):
    got = steps.after_plan(settings(), plan(**more))
    assert got == (["version.yml"] if version else []) + RELAUNCH


@pytest.mark.parametrize("more_settings, more_plan", [({"api_key": "k"}, {}), ({"api_key": "k"}, {"dirs_ready": False}),
                                                      ({}, {"launch_argv": ["/var/lib/gf/log_redact.py", "sglang"]})])
def test_the_files_come_before_the_start_when_one_is_needed(more_settings, more_plan):
    got = steps.after_plan(settings(**more_settings), plan(**more_plan))
    assert got.index("launch_files.yml") == got.index("start_process.yml") - 1
    assert "launch_files.yml" not in steps.after_plan(settings(), plan())


def test_the_process_supervisors_start_makes_the_directories_itself():
    # Directories missing, nothing else to write: the start gets the plan's `dirs` (start_process.yml).
    assert steps.after_plan(settings(), plan(dirs_ready=False)) == RELAUNCH
    # A plan without `dirs` (composed before server_plan returned them): the file tasks make them.
    old = {k: v for k, v in plan(dirs_ready=False).items() if k != "dirs"}
    assert steps.after_plan(settings(), old) == RELAUNCH[:2] + ["launch_files.yml"] + RELAUNCH[2:]
    # A systemd unit starts from files launch_files.yml writes into the directories.
    got = steps.after_plan(settings(), plan(supervisor="systemd", dirs_ready=False))
    assert got.index("launch_files.yml") == got.index("systemd_start.yml") - 1
    assert "launch_files.yml" not in steps.after_plan(settings(), plan(supervisor="systemd"))


def test_systemd_stops_and_starts_its_unit():
    got = steps.after_plan(settings(), plan(supervisor="systemd"))
    assert got == ["systemd_stop.yml", "teardown_facts.yml", "systemd_start.yml", "wait.yml", "facts.yml"]


def test_a_routed_server_leaves_its_router_before_the_stop_and_joins_it_once_ready():
    got = steps.after_plan(settings(), plan(), routed=True)
    assert got == ["router_out.yml"] + RELAUNCH[:-1] + ["router_in.yml", "facts.yml"]
    # Nothing runs: nothing to take out of the router.
    assert steps.after_plan(settings(state="stopped"), plan(running=False), routed=True) == [
        "stop_process.yml", "teardown_facts.yml"]


def test_a_stop_and_a_kept_server():
    assert steps.after_plan(settings(state="stopped"), plan()) == ["stop_process.yml", "teardown_facts.yml"]
    assert steps.after_plan(settings(), plan(keep=True)) == ["facts.yml"]
    # A node whose group does not keep every node relaunches.
    group = settings(nodes=["h1", "h2"])
    assert steps.after_plan(group, plan(keep=True), group_keep=False)[-1] == "facts.yml"
    assert steps.after_plan(settings(state="planned"), plan()) == []


def test_a_group_waits_for_its_ranks_and_only_rank_0_for_the_api():
    group = settings(nodes=["h1", "h2"])
    assert steps.after_plan(group, plan(), rank=0)[-3:] == ["group_wait.yml", "wait.yml", "facts.yml"]
    assert steps.after_plan(group, plan(), rank=1)[-2:] == ["group_wait.yml", "facts.yml"]


def test_before_the_plan_a_known_plan_is_acted_on_at_once():
    """No task keeps a plan the caller has (main.yml's include hands it to the steps as _server_plan)."""
    choice = {"call": False, "plan": plan(running=False)}
    assert steps.before_plan(settings(), choice, verified_free=True) == RELAUNCH[2:]
    assert steps.before_plan(settings(state="stopped"), {"call": False, "plan": plan()}) == [
        "stop_process.yml", "teardown_facts.yml"]


def test_before_the_plan_any_other_plans_first():
    assert steps.before_plan(settings(), {"call": True, "plan": None}) == ["plan.yml", "steps.yml"]
    assert steps.before_plan(settings(state="planned"), {"call": True, "plan": None}) == ["plan.yml"]
    # A group plans its nodes first, even with a plan at hand (its settings take the group's entry).
    assert steps.before_plan(settings(nodes=["h1", "h2"]), {"call": False, "plan": plan()}) == [
        "group.yml", "plan.yml", "steps.yml"]


@pytest.mark.parametrize("state", ["started", "stopped"])
def test_with_a_barrier_a_groups_nodes_meet_after_their_plans_and_a_single_host_never_waits(state):
    assert steps.before_plan(settings(nodes=["h1", "h2"], state=state), {"call": True, "plan": None}, barrier=True) == [
        "group.yml", "plan.yml", "barrier.yml", "steps.yml"]
    assert "barrier.yml" not in steps.before_plan(settings(state=state), {"call": True, "plan": None}, barrier=True)
    assert steps.before_plan(settings(nodes=["h1", "h2"], state="planned"), {"call": True, "plan": None},
                             barrier=True) == ["group.yml", "plan.yml"]


def test_each_file_carries_the_files_before_it_so_hosts_share_one_only_where_their_lists_agree():
    kept = steps.ordered(["facts.yml"])
    relaunched = steps.ordered(RELAUNCH)
    assert [s["file"] for s in relaunched] == RELAUNCH
    assert relaunched[0] == {"file": "stop_process.yml", "after": []}
    # The same file last in both lists is not the same step: the relaunch runs it after its own files.
    assert kept[0] != relaunched[-1] and relaunched[-1]["after"] == RELAUNCH[:-1]
    assert steps.ordered(RELAUNCH)[:3] == steps.ordered(RELAUNCH[:3] + ["router_in.yml"])[:3]


def test_every_file_named_exists_in_the_role():
    named = set(steps.STOP.values()) | set(steps.START.values()) | {
        "version.yml", "launch_files.yml", "group_wait.yml", "wait.yml", "router_in.yml", "router_out.yml",
        "facts.yml", "teardown_facts.yml", "plan_keep.yml", "plan.yml", "steps.yml", "group.yml", "barrier.yml"}
    for name in named:
        assert os.path.isfile(os.path.join(TASKS, name)), name


def test_a_use_on_the_callers_plan_carries_it_in_every_item():
    """main.yml hands the steps the plan of the loop's item; items of a use that plans carry none."""
    given = plan(running=False)
    assert steps.takes_given(settings(), {"call": False, "plan": given})
    assert not steps.takes_given(settings(), {"call": True, "plan": None})
    assert not steps.takes_given(settings(state="planned"), {"call": False, "plan": given})
    assert not steps.takes_given(settings(nodes=["a", "b"]), {"call": False, "plan": given})
    items = steps.ordered(["start_process.yml", "wait.yml"], given)
    assert [item["plan"] for item in items] == [given, given]
    assert "plan" not in steps.ordered(["plan.yml", "steps.yml"])[0]
