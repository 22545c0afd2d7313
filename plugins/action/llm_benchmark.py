# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for gpufleet.serving.llm_benchmark: a workload file on the controller travels to the host.

With `workload.source: file` and `workload.location: controller` (the default), the file
is found on the controller (as ansible.builtin.copy finds its `src`: the role's or the
playbook's files/ first), copied into the task's temporary directory on the host, and the
module reads it there; the directory is removed after the run. The result names the
controller's path. Anything else runs the module as it is.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase


def needs_copy(workload):
    return (isinstance(workload, dict) and workload.get("source") == "file" and bool(workload.get("path"))
            and (workload.get("location") or "controller") == "controller")


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        args = dict(self._task.args)
        workload = args.get("workload")
        wrap_async = self._task.async_val and not self._connection.has_native_async
        shown = None
        if needs_copy(workload):
            shown = workload["path"]
            try:
                local = self._find_needle("files", shown)
            except AnsibleError as exc:
                result.update(failed=True, msg="workload %s: file not found on the controller (%s); set "
                                               "workload.location: host for a file already on the host" % (shown, exc))
                return result
            self._make_tmp_path()
            tmpdir = self._connection._shell.tmpdir
            remote = self._connection._shell.join_path(tmpdir, "workload" + os.path.splitext(local)[1])
            self._transfer_file(local, remote)
            self._fixup_perms2((tmpdir, remote))
            args["workload"] = dict(workload, path=remote, location="host")
        res = self._execute_module(module_args=args, task_vars=task_vars, wrap_async=wrap_async)
        if shown is not None:
            if isinstance(res.get("workload"), dict) and res["workload"].get("path"):
                res["workload"]["path"] = shown
            if isinstance(res.get("msg"), str):  # a bad file's message names the controller's path
                res["msg"] = res["msg"].replace(remote, shown)
        result.update(res)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
