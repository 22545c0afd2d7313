# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller-side actions' one run(): validate, build, one error path.

benchmark_report, engine_report, experiment_plan and experiment_report differ only in their
options and in the function that does the work; all say what failed the same way.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError


class ReportAction(ActionBase):
    """Subclasses set argument_spec and build(args, check_mode) -> the result's fields."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    argument_spec: dict[str, Any] = {}
    mutually_exclusive: list = []
    required_one_of: list = []
    # The option naming the directory an OSError is reported under.
    dir_option = "dest_dir"
    # The task's variables, for a build() that reads the hosts' (experiment_plan).
    task_vars: dict[str, Any] = {}

    def build(self, args: dict[str, Any], check_mode: bool) -> dict[str, Any]:
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # no remote temporary directory is used
        self.task_vars = task_vars or {}
        unused, args = self.validate_argument_spec(argument_spec=self.argument_spec,
                                                   mutually_exclusive=self.mutually_exclusive,
                                                   required_one_of=self.required_one_of)
        # A failed result, not a raised AnsibleActionFail: ansible-core 2.19 shows a raised error
        # three times (the error, its cause, the fatal line), a failed result twice (the error and
        # the fatal line).
        try:
            out = self.build(args, bool(self._task.check_mode))
        except GpuFleetError as exc:
            return dict(result, failed=True, msg=exc.msg)
        except OSError as exc:
            return dict(result, failed=True, msg="cannot write under %s: %s" % (args[self.dir_option], exc))
        result.update(out)
        return result
