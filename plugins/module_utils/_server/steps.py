# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which task files of the internal _server role run, in order, for one use of a server role.

Each task the controller starts costs it time per host, a skipped one too, so the role does not
run a row of conditional tasks and includes: its tasks/main.yml includes the files this module
names, in one loop. Before the plan (CHOICE, choice.py choose()): a single-host server whose plan
the caller already has goes straight to keeping that plan and to the steps after it; any other
plans first (its group, then server_plan), then tasks/steps.yml asks again with the plan. After
the plan (PLAN): the stop, the kept server's facts, or the relaunch (version check, teardown,
files, start, the group's ranks, wait, router, facts), each file only where it has work to do.
"""

from __future__ import annotations

from typing import Any, Mapping

# The teardown's and the start's task files by supervisor (choice.py choose_supervisor()).
STOP = {"process": "stop_process.yml", "systemd": "systemd_stop.yml"}
START = {"process": "start_process.yml", "systemd": "systemd_start.yml"}


def ordered(files: list[str], plan: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """FILES as the role's include loop takes them: each with the files before it (`after`) and, for a
    use that acts on the plan its caller has (takes_given), that PLAN (main.yml hands it to the steps).

    Ansible merges the hosts' included files by file name and loop item, in the order it meets
    them, host after host, and each host runs the merged list's files that are its own in that
    list's order: a host with a file the first host lacks would run it after the files they share
    (a start after the facts). With the files before it in the item, two hosts share a file only
    where their lists agree up to it; past the first difference each host's files are its own, in
    its own order."""
    extra = {} if plan is None else {"plan": plan}
    return [dict(extra, file=name, after=files[:i]) for i, name in enumerate(files)]


def _group(settings: Mapping[str, Any]) -> bool:
    return len(settings.get("nodes") or []) > 1


def takes_given(settings: Mapping[str, Any], choice: Mapping[str, Any]) -> bool:
    """Whether a use acts on the plan CHOICE (choice.py choose()) took from its caller, with no plan.yml:
    a single-host server, to start or stop (a group plans as a whole; planning calls server_plan)."""
    return not choice.get("call") and not _group(settings) and settings["state"] != "planned"


def before_plan(settings: Mapping[str, Any], choice: Mapping[str, Any], verified_free: bool = False,
                routed: bool = False, barrier: bool = False) -> list[str]:
    """The files main.yml includes: with the plan known (CHOICE's `call` false) on one host, the plan's
    keeping and every step after it; otherwise the group's plan (a server spanning hosts), the plan
    and, unless only planning, steps.yml (the steps, chosen once the plan is there). With BARRIER (the
    experiment, whose hosts run at their own pace), a group's nodes meet once each has its plan and
    before any acts on it (barrier.yml): whether the group is kept reads every node's plan, and a
    stop or a start on one node must not run ahead of the others."""
    if takes_given(settings, choice):
        return after_plan(settings, choice["plan"], verified_free, routed)
    if settings["state"] == "planned":
        return (["group.yml"] if _group(settings) else []) + ["plan.yml"]
    if _group(settings):
        return ["group.yml", "plan.yml"] + (["barrier.yml"] if barrier else []) + ["steps.yml"]
    return ["plan.yml", "steps.yml"]


def _version_says_something(settings: Mapping[str, Any], plan: Mapping[str, Any]) -> bool:
    """Whether version.yml would fail (no entry point) or warn (not the tested version): it is quiet otherwise."""
    return plan.get("entry_point_exists") is False or plan.get("engine_version") not in (None, settings.get("tested_version"))


def _launch_files(settings: Mapping[str, Any], plan: Mapping[str, Any]) -> bool:
    """Whether launch_files.yml has work: the API key file or the redactor to write (both in the state
    directory, which it makes first when not ready), or the directories to make where the start does not
    make them itself (a systemd unit; a plan without `dirs`, from a caller that composed it before
    server_plan returned them)."""
    if settings.get("api_key") or plan["paths"]["redactor"] in (plan.get("launch_argv") or []):
        return True
    return not plan.get("dirs_ready") and (plan.get("supervisor") != "process" or "dirs" not in plan)


def after_plan(settings: Mapping[str, Any], plan: Mapping[str, Any], verified_free: bool = False, routed: bool = False,
               group_keep: bool = True, rank: int = 0) -> list[str]:
    """The files that act on PLAN (server_plan's result) for the settings' state.

    Stopped: the router's side when the server is routed and runs, the stop, the teardown's facts.
    Kept (every node of a group keeping, GROUP_KEEP): the facts. Relaunch: the version check when it
    has something to say, the teardown unless the caller has just proven every GPU free
    (VERIFIED_FREE) and nothing of the instance runs, the directories, key and redactor when one is
    needed (the process supervisor's start makes the directories itself), the start, the group's
    ranks (a server spanning hosts), the wait (one host, or RANK 0), the router (ROUTED) and the facts."""
    state = settings["state"]
    if state == "planned":
        return []
    supervisor = plan.get("supervisor")
    teardown = (["router_out.yml"] if routed and plan.get("running") else []) + (
        [STOP[supervisor]] if supervisor in STOP else []) + ["teardown_facts.yml"]
    if state == "stopped":
        return teardown
    if plan.get("keep") and group_keep:
        return ["facts.yml"]
    steps = ["version.yml"] if _version_says_something(settings, plan) else []
    if not (verified_free and not plan.get("running")):
        steps += teardown
    if _launch_files(settings, plan):
        steps.append("launch_files.yml")
    steps += [START[supervisor]] if supervisor in START else []
    if _group(settings):
        steps.append("group_wait.yml")
    if not _group(settings) or rank == 0:
        steps.append("wait.yml")
    if routed:
        steps.append("router_in.yml")
    return steps + ["facts.yml"]
