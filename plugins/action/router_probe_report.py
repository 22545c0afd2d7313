# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""router_probe_report: the rollout probe's report on the controller.

Documentation lives in plugins/modules/router_probe_report.py.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import rollout_probe
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction

ARGUMENT_SPEC = dict(
    probe=dict(type="dict", required=True),
    drains=dict(type="dict", default={}),
    dest_dir=dict(type="path", required=True),
    basename=dict(type="str", default="rollout_probe"),
    title=dict(type="str", default="Traffic through the router during the rollout"),
)


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC

    def build(self, args, check_mode):
        return rollout_probe.build(args["probe"], args["drains"], args["dest_dir"], args["title"], args["basename"],
                                   check_mode)
