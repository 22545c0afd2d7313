# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/_server: the directories' modes are server_plan's (plan.py DIR_MODES), whichever task makes them.

The process supervisor's start makes them from the plan's `dirs` (start_process.yml); launch_files.yml's
file tasks make them for a systemd unit, a key file, or a plan without `dirs`, with the same modes."""

from __future__ import annotations

import pathlib

import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan

TASKS = pathlib.Path(__file__).resolve().parents[3] / "roles" / "_server" / "tasks"
FILE_TASKS = {"log_dir": "Create the log directory", "state_dir": "Create the state directory"}


def tasks(name):
    return yaml.safe_load((TASKS / name).read_text())


def test_the_file_tasks_make_the_directories_with_the_plans_modes():
    by_name = {t["name"]: t for t in tasks("launch_files.yml")}
    for setting, mode in plan.DIR_MODES:
        made = by_name[FILE_TASKS[setting]]["ansible.builtin.file"]
        assert (made["path"], made["state"], int(made["mode"], 8)) == ("{{ server_spec.%s }}" % setting, "directory", mode)
        assert by_name[FILE_TASKS[setting]]["when"] == "not _server_plan.dirs_ready"


def test_the_process_start_makes_them_from_the_plan_unless_they_are_ready():
    (start,) = [t["gpufleet.serving.server_process"] for t in tasks("start_process.yml")]
    assert start["dirs"] == "{{ [] if _server_plan.dirs_ready else _server_plan.dirs | default([]) }}"
    assert [d["mode"] for d in plan.dirs({"log_dir": "/l", "state_dir": "/s"})] == ["0750", "0700"]
