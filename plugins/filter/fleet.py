# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the fleet playbooks: per-host decisions and the lines they print.

Each filter is documented in its own sidecar file (plugins/filter/NAME.yml), as
ansible-core documents its own filters; the code is in plugin_utils/_report/outcome.py and variant_lines.py.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.serving.plugins.module_utils._files import file_name
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import preset
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import outcome, variant_lines


def engine_settings(name, host="", port="", instance=""):
    """outcome.engine_settings, its ValueError (an unknown engine) as the filter's error."""
    try:
        return outcome.engine_settings(name, host, port, instance)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def swap_gates(runs, gates):
    """outcome.swap_gates, its ValueError (a bad gate) as the filter's error."""
    try:
        return outcome.swap_gates(runs, gates)
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


def experiment_planned(requests, composed, names):
    """variant_lines.planned, its ValueError (lists that do not match) as the filter's error."""
    try:
        return variant_lines.planned(requests, composed, names)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    """gpufleet.serving filters for the playbooks."""

    def filters(self):
        return {
            "server_left": outcome.server_left,
            "failure_reason": outcome.failure_reason,
            "swap_line": outcome.swap_line,
            "base_line": outcome.base_line,
            "bench_line": outcome.bench_line,
            "launch_line": outcome.launch_line,
            "teardown_line": outcome.teardown_line,
            "swap_start": outcome.swap_start,
            "swap_record": outcome.swap_record,
            "swap_failure": outcome.swap_failure,
            "swap_rolled_back": outcome.swap_rolled_back,
            "swap_step_failure": outcome.swap_step_failure,
            "swap_gates": swap_gates,
            "report_lines": outcome.report_lines,
            "not_ok": outcome.not_ok,
            "reset_summary": outcome.reset_summary,
            "reset_table": outcome.reset_table,
            "engine_settings": engine_settings,
            "teardown_record": variant_lines.teardown_record,
            "experiment_plan_lines": variant_lines.plan_lines,
            "experiment_planned": experiment_planned,
            "compare_experiment": compare_experiment,
            "swap_experiment": swap_experiment,
            "file_name": file_name,
        }
