# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the fleet playbooks: per-host decisions and the lines they print.

Each filter is documented in its own sidecar file (plugins/filter/NAME.yml), as
ansible-core documents its own filters; the code is in plugin_utils/_report/ (swap.py, host_lines.py,
closing.py, reset.py, follow.py, variant_lines.py), plugin_utils/_experiment/ (engine_settings.py, preset.py,
host_plan.py, variant_state.py), module_utils/_engines/settings.py, module_utils/_server/choice.py, steps.py and group.py.
"""

from __future__ import annotations

from importlib import import_module

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# Ansible imports this file in each worker process that templates one of its filters, and its
# collection loader compiles every collection module imported (it keeps no bytecode): importing all
# the code behind these filters cost a task about 55 ms. So each filter imports its module when
# called (_code), and a task pays only for the code it uses.
_PLUGINS = "ansible_collections.gpufleet.serving.plugins."


def _code(module):
    """plugins/MODULE (dotted), imported at its first use in this process."""
    return import_module(_PLUGINS + module)


def _lazy(module, name):
    """The filter NAME of plugins/MODULE, imported when the filter is first called."""
    def call(*args, **kwargs):
        return getattr(_code(module), name)(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = "%s.%s" % (module, name)
    return call


def engine_settings(name, host="", port="", instance=""):
    """engine_settings.engine_settings, its ValueError (an unknown engine) as the filter's error."""
    try:
        return _code("plugin_utils._experiment.engine_settings").engine_settings(name, host, port, instance)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def server_topology(settings):
    """server_group.topology: the shape (nodes, nnodes, TP/PP/DP/EP sizes) of one server's settings."""
    if not isinstance(settings, dict) or "engine" not in settings:
        raise AnsibleFilterError("server_topology: give the server_spec lookup's dict of one server (it has no 'engine')")
    return _code("module_utils._server.group").topology(settings["engine"], settings)


def server_plan_options(settings):
    """server_spec.plan_options: server_plan's options for one server's settings (the server_spec lookup's dict)."""
    try:
        return _code("module_utils._engines.settings").plan_options(settings)
    except (InvalidInput, KeyError) as exc:
        raise AnsibleFilterError("server_plan_options: not a server_spec dict (missing %s)" % exc) from exc


def swap_gates(runs, gates):
    """swap.swap_gates, its ValueError (a bad gate) as the filter's error."""
    try:
        return _code("plugin_utils._report.swap").swap_gates(runs, gates)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def compare_experiment(labels, reference=None, benchmark=None):
    """preset.compare_experiment, its ValueError (an unknown variant) as the filter's error."""
    try:
        return _code("plugin_utils._experiment.preset").compare_experiment(labels, reference, benchmark)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def swap_experiment(engine=None, baseline=True, benchmark=None):
    """preset.swap_experiment, its ValueError (an unknown engine) as the filter's error."""
    try:
        return _code("plugin_utils._experiment.preset").swap_experiment(engine, baseline, benchmark)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def experiment_planned(servers, composed, names):
    """host_plan.planned, its ValueError (lists that do not match) as the filter's error."""
    try:
        return _code("plugin_utils._experiment.host_plan").planned(servers, composed, names)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def server_plan_choice(settings, service_mgr="", last=None, last_of=None, reuse=False, given=None,
                       verified_free=False, dirs_used=None):
    """_server/choice.py choose(): call server_plan, or take the plan the caller already has."""
    try:
        return _code("module_utils._server.choice").choose(settings, service_mgr, last, last_of, bool(reuse), given, bool(verified_free), dirs_used)
    except InvalidInput as exc:
        raise AnsibleFilterError(exc.msg) from exc
    except KeyError as exc:
        raise AnsibleFilterError("server_plan_choice: not a server_spec dict (missing %s)" % exc) from exc


def server_steps(settings, inputs=None, plan=None, verified_free=False, routed=False, group_keep=True, group=None,
                 barrier=False):
    """_server/steps.py: the _server role's task files for one use, before the plan (INPUTS: choose()'s
    keyword arguments; BARRIER: a group's nodes meet after their plans) or after it (PLAN)."""
    server_steps_of = _code("module_utils._server.steps")
    try:
        if plan is not None:
            return server_steps_of.ordered(server_steps_of.after_plan(settings, plan, bool(verified_free), bool(routed),
                                                                      bool(group_keep), int((group or {}).get("rank") or 0)))
        inputs = dict(inputs or {})
        try:
            choice = _code("module_utils._server.choice").choose(settings, inputs.pop("service_mgr", ""), **inputs)
        except InvalidInput:
            # plan.yml's server_plan_choice refuses it, in the task that names the plan.
            choice = {"call": True, "plan": None}
        files = server_steps_of.before_plan(settings, choice, bool(inputs.get("verified_free")), bool(routed), bool(barrier))
        return server_steps_of.ordered(files, choice["plan"] if server_steps_of.takes_given(settings, choice) else None)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("server_steps: not a server_spec dict and a plan (missing %s)" % exc) from exc


def server_plan_request(server, service_mgr=""):
    """host_plan.plan_request: server_plan's batch item for one server's settings."""
    try:
        return _code("plugin_utils._experiment.host_plan").plan_request(server, service_mgr)
    except (InvalidInput, KeyError) as exc:
        raise AnsibleFilterError("server_plan_request: not a server_spec dict (missing %s)" % exc) from exc


class FilterModule:
    """gpufleet.serving filters for the playbooks."""

    def filters(self):
        return {
            "server_left": _lazy("plugin_utils._report.swap", "server_left"),
            "failure_reason": _lazy("plugin_utils._report.closing", "failure_reason"),
            "swap_line": _lazy("plugin_utils._report.host_lines", "swap_line"),
            "base_line": _lazy("plugin_utils._report.host_lines", "base_line"),
            "bench_line": _lazy("plugin_utils._report.host_lines", "bench_line"),
            "launch_line": _lazy("plugin_utils._report.host_lines", "launch_line"),
            "teardown_line": _lazy("plugin_utils._report.host_lines", "teardown_line"),
            "swap_start": _lazy("plugin_utils._report.swap", "swap_start"),
            "swap_record": _lazy("plugin_utils._report.swap", "swap_record"),
            "swap_failure": _lazy("plugin_utils._report.swap", "swap_failure"),
            "swap_rolled_back": _lazy("plugin_utils._report.swap", "swap_rolled_back"),
            "swap_step_failure": _lazy("plugin_utils._report.swap", "swap_step_failure"),
            "swap_gates": swap_gates,
            "report_lines": _lazy("plugin_utils._report.closing", "report_lines"),
            "not_ok": _lazy("plugin_utils._report.closing", "not_ok"),
            "reset_summary": _lazy("plugin_utils._report.reset", "reset_summary"),
            "reset_table": _lazy("plugin_utils._report.reset", "reset_table"),
            "engine_settings": engine_settings,
            "teardown_record": _lazy("plugin_utils._report.variant_lines", "teardown_record"),
            "experiment_plan_lines": _lazy("plugin_utils._report.variant_lines", "plan_lines"),
            "experiment_plan_block": _lazy("plugin_utils._report.variant_lines", "plan_block"),
            "experiment_planned": experiment_planned,
            "compare_experiment": compare_experiment,
            "swap_experiment": swap_experiment,
            "server_plan_options": server_plan_options,
            "server_topology": server_topology,
            "server_plan_request": server_plan_request,
            "server_plan_choice": server_plan_choice,
            "server_steps": server_steps,
            "experiment_pick": _lazy("plugin_utils._experiment.variant_state", "pick"),
            "experiment_stop_verified": _lazy("plugin_utils._experiment.variant_state", "stop_verified"),
            "experiment_close": _lazy("plugin_utils._experiment.variant_state", "close"),
            "experiment_measured_here": _lazy("plugin_utils._experiment.variant_state", "measured_here"),
            "group_node_result": _lazy("plugin_utils._experiment.variant_state", "node_result"),
            "experiment_drafter_checks": _lazy("plugin_utils._experiment.host_plan", "drafter_checks"),
            "experiment_refusal": _lazy("plugin_utils._experiment.host_plan", "refusal"),
            "file_name": _lazy("module_utils._files", "file_name"),
            "joined_file_name": _lazy("module_utils._files", "joined_file_name"),
            "progress_file": _lazy("plugin_utils._report.follow", "progress_file"),
            "follow_command": _lazy("plugin_utils._report.follow", "follow_command"),
        }
