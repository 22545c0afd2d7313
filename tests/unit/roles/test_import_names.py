# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A static import's name holds no template.

Ansible reads an import_role or import_tasks task when it loads the file, before any loop or
set_fact of the play has run, and templates its name then: a name that reads such a variable
printed "[WARNING]: Encountered 1 template error ... 'fleet_exp_variant' is undefined" at the
start of every experiment. The import's name is never shown (its tasks are), so it needs none."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from tests.support.paths import REPO

IMPORTS = {"import_role", "import_tasks", "ansible.builtin.import_role", "ansible.builtin.import_tasks"}
FILES = sorted(list(pathlib.Path(REPO, "roles").glob("*/tasks/*.yml"))
               + list(pathlib.Path(REPO, "playbooks").glob("*.yml")))


def _tasks(items):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from _tasks(item.get(key))


def templated_import_names(path):
    """The names of PATH's static imports that hold a template."""
    return [task["name"] for task in _tasks(yaml.safe_load(path.read_text()))
            if IMPORTS & set(task) and "{{" in str(task.get("name", ""))]


def test_the_task_files_are_found():
    assert any(path.name == "experiment_variant.yml" for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda path: str(path.relative_to(REPO)))
def test_no_static_import_has_a_templated_name(path):
    assert templated_import_names(path) == [], "%s: name the import without a template" % path


def test_a_templated_import_name_is_found(tmp_path):
    path = tmp_path / "tasks.yml"
    path.write_text("- name: Run the variant\n  block:\n    - name: 'Launch {{ fleet_exp_variant.name }}'\n"
                    "      ansible.builtin.import_role: {name: gpufleet.serving._server}\n")
    assert templated_import_names(path) == ["Launch {{ fleet_exp_variant.name }}"]
