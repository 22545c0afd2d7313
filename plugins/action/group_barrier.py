# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""group_barrier: the nodes of a server group meet at a step of an experiment, on the controller.

Documentation lives in plugins/modules/group_barrier.py; the work is done by
plugins/plugin_utils/_experiment/group_barrier.py. Nothing runs on a remote host.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import group_barrier
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction

ARGUMENT_SPEC = dict(
    dir=dict(type="path", required=True),
    run=dict(type="str", required=True),
    step=dict(type="str"),
    node=dict(type="str", required=True),
    nodes=dict(type="list", elements="str", required=True),
    timeout=dict(type="float", default=86400),
    leave=dict(type="str"),
)


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC
    dir_option = "dir"

    def build(self, args, check_mode):
        if check_mode or len(args["nodes"]) < 2:
            return {"changed": False, "waited": 0.0, "nodes": args["nodes"]}
        if args["leave"]:
            return dict(group_barrier.leave(args["dir"], args["run"], args["node"], args["leave"]), changed=True)
        if not args["step"]:
            raise InvalidInput("group_barrier: give step (the step to meet at) or leave (why this node halted)")
        out = group_barrier.meet(args["dir"], args["run"], args["step"], args["node"], args["nodes"], args["timeout"])
        return dict(out, changed=False)
