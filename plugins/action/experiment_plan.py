# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""experiment_plan: read and check an experiment file on the controller, say what each host runs.

Documentation lives in plugins/modules/experiment_plan.py; the work is done by
plugins/plugin_utils/_experiment/plan.py. Nothing runs on a remote host.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.plan import plan
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction

ARGUMENT_SPEC = dict(
    file=dict(type="path", required=True),
    hosts=dict(type="list", elements="str", required=True),
    results_dir=dict(type="path", required=True),
    fresh=dict(type="bool", default=False),
    confirm=dict(type="bool", default=False),
)


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC
    dir_option = "results_dir"

    def build(self, args, check_mode):
        return plan(args["file"], args["hosts"], args["results_dir"], fresh=args["fresh"], confirm=args["confirm"],
                    check_mode=check_mode)
