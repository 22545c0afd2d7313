# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""engine_report: the engine comparison of compare_engines.yml, written on the controller.

Documentation lives in plugins/modules/engine_report.py; the report is built by
plugins/plugin_utils/_report/compare.py. Nothing runs on a remote host.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.files import build_comparison

ARGUMENT_SPEC = dict(
    records=dict(type="dict", required=True),
    dest_dir=dict(type="path", required=True),
    title=dict(type="str", default="Engine comparison"),
    reference=dict(type="str", default=_registry.DEFAULT),
    variants=dict(type="list", elements="str", default=[]),
    basename=dict(type="str", default="compare"),
)


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC

    def build(self, args, check_mode):
        return build_comparison(
            args["records"], args["dest_dir"], title=args["title"], reference=args["reference"],
            variants=args["variants"], basename=args["basename"], check_mode=check_mode,
        )
