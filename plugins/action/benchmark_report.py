# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""benchmark_report: merge per-host llm_benchmark results on the controller.

Documentation lives in plugins/modules/benchmark_report.py. Nothing runs on a
remote host: the files are written on the controller.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.action import ReportAction
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.files import build_report

ARGUMENT_SPEC = dict(
    results=dict(type="raw", required=True),
    dest_dir=dict(type="path", required=True),
    title=dict(type="str", default="LLM serving benchmark"),
    baseline_label=dict(type="str", default="baseline"),
    candidate_label=dict(type="str", default="candidate"),
    basename=dict(type="str", default="benchmark"),
    gpus_per_server=dict(type="int"),
)


class ActionModule(ReportAction):
    argument_spec = ARGUMENT_SPEC

    def build(self, args, check_mode):
        return build_report(
            args["results"], args["dest_dir"], title=args["title"],
            baseline_label=args["baseline_label"], candidate_label=args["candidate_label"],
            basename=args["basename"], gpus_per_server=args["gpus_per_server"], check_mode=check_mode,
        )
