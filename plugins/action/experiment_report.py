# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""experiment_report: every recorded variant of an experiment against its reference, with the gates.

Documentation lives in plugins/modules/experiment_report.py; the report is built by
plugins/plugin_utils/_experiment/report.py (from the records _experiment/store.py reads).
Nothing runs on a remote host. Gate failures are returned, not failed on: the playbook
fails naming them after the report is written.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import report
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction

ARGUMENT_SPEC = dict(
    experiment=dict(type="dict", required=True),
    results_dir=dict(type="path", required=True),
    dest_dir=dict(type="path", required=True),
    title=dict(type="str", default=""),
    simulator_models=dict(type="dict"),
)


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC

    def build(self, args, check_mode):
        return report.from_results(args["experiment"], args["results_dir"], args["dest_dir"], args["title"],
                                   check_mode=check_mode, simulator_models=args["simulator_models"])
