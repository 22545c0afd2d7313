# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""experiment_plan: read and check an experiment file on the controller, say what each host runs.

Documentation lives in plugins/modules/experiment_plan.py; the work is done by
plugins/plugin_utils/_experiment/plan.py. Nothing runs on a remote host.
"""

from __future__ import annotations

from ansible.plugins.loader import lookup_loader

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.plan import plan
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.source import Source
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction

ARGUMENT_SPEC = dict(
    file=dict(type="path"),
    experiment=dict(type="dict"),
    origin=dict(type="str", default="the given experiment"),
    resume=dict(type="bool", default=True),
    hosts=dict(type="list", elements="str", required=True),
    results_dir=dict(type="path", required=True),
    fresh=dict(type="bool", default=False),
    confirm=dict(type="bool", default=False),
)


MUTUALLY_EXCLUSIVE = [("file", "experiment")]
REQUIRED_ONE_OF = [("file", "experiment")]


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC
    mutually_exclusive = MUTUALLY_EXCLUSIVE
    required_one_of = REQUIRED_ONE_OF
    dir_option = "results_dir"

    def build(self, args, check_mode):
        source = args["file"] if args["experiment"] is None else Source.given(args["experiment"], args["origin"])
        return plan(source, args["hosts"], args["results_dir"], fresh=args["fresh"], confirm=args["confirm"],
                    check_mode=check_mode, resume=args["resume"], resolve=self.resolve)

    def resolve(self, host, requests):
        """HOST's server spec of each of REQUESTS: the server_spec lookup over the host's variables
        (inventory host and group variables, extra vars), as the host's own planning reads them; a
        host the inventory does not hold has none (every setting its default)."""
        hostvars = self.task_vars.get("hostvars") or {}
        lookup = lookup_loader.get("gpufleet.serving.server_spec", loader=self._loader, templar=self._templar)
        return lookup.run([list(requests)], variables=hostvars[host] if host in hostvars else {})
