# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A play that enters gpufleet.serving._server the way a public server role hands it on.

sglang_server and vllm_server map their variables onto _server's inputs in one import_role
task (their tasks/main.yml). A test that needs only part of the graph (the plan, the unit's
templates, the version check) enters _server with tasks_from in a play whose vars are that same
mapping, read from the role's own file, after the role's defaults and vars are loaded (an
import that runs none of its tasks): variables a test sets by the public names, as extra vars,
in an inventory or at an include, reach _server as the role would hand them on.
"""
import os
import textwrap

import yaml

from tests.support.paths import REPO

ROLES = os.path.join(REPO, "roles")
SERVER = "gpufleet.serving._server"


def mapping(role):
    """The vars of ROLE's task that enters _server (an import_role, or an include_role)."""
    with open(os.path.join(ROLES, role, "tasks", "main.yml"), encoding="utf-8") as handle:
        (task,) = [t for t in yaml.safe_load(handle)
                   if (t.get("ansible.builtin.import_role") or t.get("ansible.builtin.include_role") or {}).get("name")
                   == SERVER]
    return task["vars"]


def play(role, name, tasks, hosts="localhost"):
    """The play NAME on HOSTS: ROLE's defaults and vars loaded, its mapping as the play's vars,
    then TASKS (YAML text of a task list, indented for a play's `tasks:`)."""
    load = {"name": "Load %s's defaults and vars without running it" % role,
            "ansible.builtin.import_role": {"name": "gpufleet.serving." + role}, "when": False}
    head = {"name": name, "hosts": hosts, "gather_facts": False, "vars": mapping(role)}
    return (yaml.safe_dump([head], sort_keys=False, width=1000)
            + "  tasks:\n" + textwrap.indent(yaml.safe_dump([load], sort_keys=False), "    ") + tasks)
