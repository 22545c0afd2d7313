# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""experiment_record: write one finished variant's record on the controller (resume reads it).

Documentation lives in plugins/modules/experiment_record.py; the file is written by
plugins/plugin_utils/_experiment/store.py. In-process on the controller: no module is sent
anywhere, so a variant's record costs no module start-up.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction

ARGUMENT_SPEC = dict(
    record=dict(type="dict", required=True),
    dest=dict(type="path", required=True),
)


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC
    dir_option = "dest"

    def build(self, args, check_mode):
        if check_mode:
            return {"changed": True, "dest": args["dest"], "record": args["record"]}
        return {"changed": True, "dest": args["dest"], "record": store.write_record(args["dest"], args["record"])}
