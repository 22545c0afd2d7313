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

With `request_records_to`, the per-request records the module wrote on the host are copied to
that path on the controller in the same task, over the connection's own file transfer (through
slurp when the task becomes another user, who owns the file): no separate fetch task, whose
remote stat is one more module start per benchmark.
"""

from __future__ import annotations

import base64
import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.formats import regular_file_problem


def needs_copy(workload):
    return (isinstance(workload, dict) and workload.get("source") == "file" and bool(workload.get("path"))
            and (workload.get("location") or "controller") == "controller")


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = True

    def _copy_records(self, remote, local, task_vars):
        """Copy the host's REMOTE to the controller's LOCAL; what went wrong, or None."""
        try:
            os.makedirs(os.path.dirname(os.path.abspath(local)), exist_ok=True)
            if self._connection.become:
                got = self._execute_module(module_name="ansible.legacy.slurp", module_args={"src": remote},
                                           task_vars=task_vars)
                if got.get("failed"):
                    return got.get("msg") or "slurp failed"
                with open(local, "wb") as handle:
                    handle.write(base64.b64decode(got["content"]))
            else:
                self._connection.fetch_file(remote, local)
        except (AnsibleError, OSError, KeyError, ValueError) as exc:
            return str(exc)
        return None

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        args = dict(self._task.args)
        records_to = args.pop("request_records_to", None)
        workload = args.get("workload")
        wrap_async = self._task.async_val and not self._connection.has_native_async
        shown = None
        if records_to and wrap_async:
            result.update(failed=True, msg="request_records_to needs a run without async (the records are copied "
                                           "when the module ends); fetch request_records in a later task instead")
            return result
        if needs_copy(workload):
            shown = workload["path"]
            try:
                local = self._find_needle("files", shown)
            except AnsibleError as exc:
                result.update(failed=True, msg="workload %s: file not found on the controller (%s); set "
                                               "workload.location: host for a file already on the host" % (shown, exc))
                return result
            problem = regular_file_problem(os.stat(local))
            if problem:  # copied, /dev/zero would fill the host's disk up to Ansible's transfer limit
                result.update(failed=True, msg="workload %s (%s on the controller): %s" % (shown, local, problem))
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
        if records_to and res.get("request_records") and not res.get("failed") and not self._task.check_mode:
            problem = self._copy_records(res["request_records"], records_to, task_vars)
            if problem:
                res.update(failed=True, msg="request_records_to: copying %s from the host to %s on the controller "
                                            "failed: %s" % (res["request_records"], records_to, problem))
            else:
                res["request_records_to"] = records_to
        result.update(res)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
