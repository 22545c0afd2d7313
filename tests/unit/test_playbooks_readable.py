# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The playbooks stay readable: short, and their logic in Python.

No Jinja macro, no test on a task's name, no list built with append, no Jinja loop or
block tag; the decisions and lines are the gpufleet.serving filters' (plugins/filter/).
"""

from __future__ import annotations

import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOKS = sorted((REPO / "playbooks").glob("*.yml"))
FLEET_ROLE = sorted((REPO / "roles" / "_fleet").glob("*/*.yml"))
LIMIT = 120
FORBIDDEN = ("{% macro", "{%- macro", "ansible_failed_task.name", ".append(", "{% for", "{%- for",
             "{% if", "{%- if", "{% set", "{%- set")


def test_there_are_playbooks():
    assert {p.name for p in PLAYBOOKS} >= {"swap_to_eagle.yml", "swap_to_base.yml", "benchmark.yml",
                                           "reset.yml", "launch.yml", "teardown.yml"}


@pytest.mark.parametrize("path", PLAYBOOKS, ids=lambda p: p.name)
def test_playbook_is_short(path):
    assert len(path.read_text().splitlines()) < LIMIT


@pytest.mark.parametrize("path", PLAYBOOKS + FLEET_ROLE, ids=lambda p: str(p.relative_to(REPO)))
def test_no_logic_in_jinja(path):
    text = path.read_text()
    found = [f for f in FORBIDDEN if f in text]
    assert not found, "%s holds %s: put it in a filter (plugins/filter/fleet.py)" % (path.name, found)


@pytest.mark.parametrize("path", PLAYBOOKS, ids=lambda p: p.name)
def test_every_variable_read_is_named_in_the_header(path):
    """A variable the playbook reads with a default is one a user sets: its header comment names
    it (the _fleet role's own facts, fleet_*, are not the user's)."""
    text = path.read_text()
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    read = set(re.findall(r"\{\{\s*([a-z][a-z0-9_]*)\s*\|\s*default\(", text))
    unnamed = sorted(n for n in read if not n.startswith("fleet_") and not re.search(r"\b%s\b" % n, header))
    assert not unnamed, "%s reads %s, which its header does not name" % (path.name, unnamed)
