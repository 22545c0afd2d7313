# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the fleet playbooks: per-host decisions and the lines they print.

Each filter is documented in its own sidecar file (plugins/filter/NAME.yml), as
ansible-core documents its own filters; the code is in plugin_utils/_report/ (swap.py, host_lines.py,
closing.py, reset.py, follow.py, variant_lines.py), plugin_utils/_experiment/ (engine_settings.py, preset.py,
host_plan.py, variant_state.py), module_utils/_engines/settings.py, module_utils/_server/plan.py and module_utils/_server/group.py.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_spec
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._files import file_name, joined_file_name
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group as server_group
from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan as server_plan
from ansible_collections.gpufleet.serving.plugins.module_utils._server import steps as server_steps_of
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import engine_settings as _engine_settings
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import host_plan, preset, variant_state
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import closing, follow, host_lines, reset, swap, variant_lines


def engine_settings(name, host="", port="", instance=""):
    """engine_settings.engine_settings, its ValueError (an unknown engine) as the filter's error."""
    try:
        return _engine_settings.engine_settings(name, host, port, instance)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def server_topology(settings):
    """server_group.topology: the shape (nodes, nnodes, TP/PP/DP/EP sizes) of one server's settings."""
    if not isinstance(settings, dict) or "engine" not in settings:
        raise AnsibleFilterError("server_topology: give the server_spec lookup's dict of one server (it has no 'engine')")
    return server_group.topology(settings["engine"], settings)


def server_plan_options(settings):
    """server_spec.plan_options: server_plan's options for one server's settings (the server_spec lookup's dict)."""
    try:
        return server_spec.plan_options(settings)
    except (InvalidInput, KeyError) as exc:
        raise AnsibleFilterError("server_plan_options: not a server_spec dict (missing %s)" % exc) from exc


def swap_gates(runs, gates):
    """swap.swap_gates, its ValueError (a bad gate) as the filter's error."""
    try:
        return swap.swap_gates(runs, gates)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def compare_experiment(labels, reference=None, benchmark=None):
    """preset.compare_experiment, its ValueError (an unknown variant) as the filter's error."""
    try:
        return preset.compare_experiment(labels, reference, benchmark)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def swap_experiment(engine=None, baseline=True, benchmark=None):
    """preset.swap_experiment, its ValueError (an unknown engine) as the filter's error."""
    try:
        return preset.swap_experiment(engine, baseline, benchmark)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def experiment_planned(servers, composed, names):
    """host_plan.planned, its ValueError (lists that do not match) as the filter's error."""
    try:
        return host_plan.planned(servers, composed, names)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def server_plan_choice(settings, service_mgr="", last=None, last_of=None, reuse=False, given=None,
                       verified_free=False, dirs_used=None):
    """_server/plan.py choose(): call server_plan, or take the plan the caller already has."""
    try:
        return server_plan.choose(settings, service_mgr, last, last_of, bool(reuse), given, bool(verified_free), dirs_used)
    except InvalidInput as exc:
        raise AnsibleFilterError(exc.msg) from exc
    except KeyError as exc:
        raise AnsibleFilterError("server_plan_choice: not a server_spec dict (missing %s)" % exc) from exc


def server_steps(settings, inputs=None, plan=None, verified_free=False, routed=False, group_keep=True, group=None,
                 barrier=False):
    """_server/steps.py: the _server role's task files for one use, before the plan (INPUTS: choose()'s
    keyword arguments; BARRIER: a group's nodes meet after their plans) or after it (PLAN)."""
    try:
        if plan is not None:
            return server_steps_of.ordered(server_steps_of.after_plan(settings, plan, bool(verified_free), bool(routed),
                                                                      bool(group_keep), int((group or {}).get("rank") or 0)))
        inputs = dict(inputs or {})
        try:
            choice = server_plan.choose(settings, inputs.pop("service_mgr", ""), **inputs)
        except InvalidInput:
            # plan.yml's server_plan_choice refuses it, in the task that names the plan.
            choice = {"call": True, "plan": None}
        return server_steps_of.ordered(server_steps_of.before_plan(settings, choice, bool(inputs.get("verified_free")),
                                                                   bool(routed), bool(barrier)))
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("server_steps: not a server_spec dict and a plan (missing %s)" % exc) from exc


def server_plan_request(server, service_mgr=""):
    """host_plan.plan_request: server_plan's batch item for one server's settings."""
    try:
        return host_plan.plan_request(server, service_mgr)
    except (InvalidInput, KeyError) as exc:
        raise AnsibleFilterError("server_plan_request: not a server_spec dict (missing %s)" % exc) from exc


class FilterModule:
    """gpufleet.serving filters for the playbooks."""

    def filters(self):
        return {
            "server_left": swap.server_left,
            "failure_reason": closing.failure_reason,
            "swap_line": host_lines.swap_line,
            "base_line": host_lines.base_line,
            "bench_line": host_lines.bench_line,
            "launch_line": host_lines.launch_line,
            "teardown_line": host_lines.teardown_line,
            "swap_start": swap.swap_start,
            "swap_record": swap.swap_record,
            "swap_failure": swap.swap_failure,
            "swap_rolled_back": swap.swap_rolled_back,
            "swap_step_failure": swap.swap_step_failure,
            "swap_gates": swap_gates,
            "report_lines": closing.report_lines,
            "not_ok": closing.not_ok,
            "reset_summary": reset.reset_summary,
            "reset_table": reset.reset_table,
            "engine_settings": engine_settings,
            "teardown_record": variant_lines.teardown_record,
            "experiment_plan_lines": variant_lines.plan_lines,
            "experiment_plan_block": variant_lines.plan_block,
            "experiment_planned": experiment_planned,
            "compare_experiment": compare_experiment,
            "swap_experiment": swap_experiment,
            "server_plan_options": server_plan_options,
            "server_topology": server_topology,
            "server_plan_request": server_plan_request,
            "server_plan_choice": server_plan_choice,
            "server_steps": server_steps,
            "experiment_pick": variant_state.pick,
            "experiment_stop_verified": variant_state.stop_verified,
            "experiment_close": variant_state.close,
            "experiment_measured_here": variant_state.measured_here,
            "group_node_result": variant_state.node_result,
            "experiment_drafter_checks": host_plan.drafter_checks,
            "experiment_refusal": host_plan.refusal,
            "file_name": file_name,
            "joined_file_name": joined_file_name,
            "progress_file": follow.progress_file,
            "follow_command": follow.follow_command,
        }
