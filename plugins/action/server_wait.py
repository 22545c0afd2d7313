# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for gpufleet.serving.server_wait: the wait in slices, with progress in the play's output.

Without `progress_interval` (or in check mode, or with async) the module runs once, as it
always did. With it, the module runs for at most that many seconds at a time, and between
two runs the controller prints one line (host, URL, seconds since the wait began, start-up
phase), so a 20-minute model load is not silent. One task, one result: the last run's,
with `elapsed` and `phases` counted from the start of the whole wait, and at the timeout a
message that names the phase and the last log lines. Each slice after the first is told
which process the first one watched (PID and start time), so a PID reused in between counts
as the server gone, as it does in one long wait.
"""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

TAIL_IN_MESSAGE = 6  # log lines the timeout message shows (the result has them all)


def merge_phases(known, new, offset):
    """Phases first seen in earlier slices keep their time; new ones get the slice's offset."""
    names = {p.get("name") for p in known}
    out = list(known)
    for phase in new or []:
        if phase.get("name") in names:
            continue
        moved = dict(phase)
        moved["at"] = round(float(phase.get("at") or 0.0) + offset, 3)
        out.append(moved)
        names.add(phase.get("name"))
    return out


def carry_identity(args, res):
    """The next slice checks the process this one saw (PID and start time), as one long wait does.

    Without it each slice would take whatever process holds the PID when it starts as the
    server, and a PID reused between two slices would go unnoticed until the timeout.
    """
    proc = res.get("process") or {}
    if proc.get("alive") and proc.get("pid") and proc.get("start_time") is not None:
        args["process_identity"] = {"pid": proc["pid"], "start_time": proc["start_time"]}


def timeout_message(result, spent, timeout, log_path):
    health = result.get("health_status") or result.get("health_error") or "no answer"
    msg = "Server at %s not ready after %.1f s (timeout %s s); phase: %s; last health: %s" % (
        result.get("url"), spent, timeout, result.get("phase") or "unknown",
        "HTTP %s" % health if isinstance(health, int) else health)
    tail = [line for line in (result.get("log_tail") or []) if line.strip()][-TAIL_IN_MESSAGE:]
    if log_path:
        msg += "; log %s: %s" % (log_path, " | ".join(tail) if tail else "(empty)")
    return msg


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        args = dict(self._task.args)
        wrap_async = self._task.async_val and not self._connection.has_native_async
        interval = args.get("progress_interval")
        if interval in (None, "", 0) or self._task.check_mode or self._task.async_val:
            result.update(self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        try:
            interval = float(interval)
            timeout = float(args.get("timeout", 1800))
        except (TypeError, ValueError):
            result.update(failed=True, msg="progress_interval and timeout must be numbers, got %r and %r"
                          % (interval, args.get("timeout")))
            return result
        if interval <= 0 or timeout <= 0:
            result.update(failed=True, msg="progress_interval and timeout must be greater than 0")
            return result
        result.update(self._wait_in_slices(args, interval, timeout, task_vars))
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _wait_in_slices(self, args, interval, timeout, task_vars):
        host = (task_vars or {}).get("inventory_hostname", "?")
        started = time.monotonic()
        phases = []
        while True:
            spent = time.monotonic() - started
            # At least a second per slice, like the role's former loop (a probe needs time).
            args["timeout"] = min(interval, max(timeout - spent, 1.0))
            res = self._execute_module(module_args=args, task_vars=task_vars)
            carry_identity(args, res)
            phases = merge_phases(phases, res.get("phases"), spent)
            res["phases"] = phases
            spent = time.monotonic() - started
            cause = res.get("cause") or {}
            if res.get("ready") or not res.get("failed") or cause.get("kind") != "timeout":
                # Ready, or the server died (the module's message names the cause and the log).
                res["elapsed"] = round(spent, 3)
                return res
            if spent >= timeout:
                msg = timeout_message(res, spent, timeout, args.get("log_path"))
                res.update(msg=msg, elapsed=round(spent, 3), cause=dict(cause, message=msg))
                return res
            display.display("%s: %s still starting after %d s, phase %s"
                            % (host, res.get("url"), int(spent), res.get("phase") or "unknown"))
