# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ansible callback for bench/relaunch_overhead.py --task-times: how long each task took."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_times
type: aggregate
short_description: Each task's wall time, written as JSON for bench/relaunch_overhead.py
description:
  - From one task's start to the next one's (or the play's end), over all hosts, as the linear
    strategy runs them; an include counts until its first task starts.
  - Appends one JSON line, a list of [task name, seconds], to the file named by the environment
    variable GPUFLEET_TASK_TIMES when the playbook ends; nothing without it.
requirements:
  - enable in configuration (ANSIBLE_CALLBACKS_ENABLED=task_times, ANSIBLE_CALLBACK_PLUGINS=bench/callbacks)
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._current = None
        self._times = []

    def _close(self):
        if self._current is not None:
            name, started = self._current
            self._times.append([name, time.monotonic() - started])
            self._current = None

    def _start(self, task):
        self._close()
        self._current = (task.get_name(), time.monotonic())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._start(task)

    def v2_playbook_on_play_start(self, play):
        self._close()

    def v2_playbook_on_stats(self, stats):
        self._close()
        path = os.environ.get("GPUFLEET_TASK_TIMES")
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(self._times) + "\n")
