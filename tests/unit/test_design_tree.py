# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/design.md's tree of the collection (its first code block) against the real tree.

Every directory and file the tree names exists where the tree puts it, and the tree names
every package and Python file of plugins/module_utils/ and plugins/plugin_utils/, every action
plugin, every directory under plugins/ and every role: a file added, moved or removed without
the tree following fails here.

How the tree is read: a line holds names (ending in `/` or `.py`) up to the first run of two
spaces, then a description; its indentation (two spaces a level) places the names under the
directory above. The description (and the lines below it that start in the description column)
may name the directory's own files (`table.py`) and a subdirectory's, as `workload/ (items.py)`.
"""

from __future__ import annotations

import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "design.md"
DESCRIPTION_COLUMN = 20  # a line starting this far in continues the description above it
FILE = r"[\w.-]+\.py"


def tree_block(text):
    found = re.search(r"^```\n(plugins/\n.*?)^```", text, re.M | re.S)
    assert found, "docs/design.md has no tree starting with plugins/"
    return found.group(1)


def _described_files(directory, description):
    """Paths of the files a directory's description names (subdirectory groups included)."""
    out = []
    for sub, group in re.findall(r"([\w-]+/)\s*\(([^)]*)\)", description):
        out += [directory + sub] + [directory + sub + name for name in re.findall(FILE, group)]
    rest = re.sub(r"[\w-]+/\s*\([^)]*\)", " ", description)
    out += [directory + name for name in re.findall(r"(?<![\w/])" + FILE, rest)]
    return out


def parse(block):
    """(directories and files the tree places, files its descriptions name), repo-relative."""
    entries, described, stack, current = [], [], [], None
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent >= DESCRIPTION_COLUMN:
            described += _described_files(current, line.strip()) if current else []
            continue
        head, unused, description = line.strip().partition("  ")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        names = head.split()
        for name in names:
            entries.append(parent + name)
        current = parent + names[0] if names[0].endswith("/") else parent
        if names[0].endswith("/"):
            stack.append((indent, parent + names[0]))
        described += _described_files(current, description)
    return entries, described


def _tree():
    return parse(tree_block(DOC.read_text(encoding="utf-8")))


def test_every_name_in_the_tree_exists():
    entries, described = _tree()
    missing = [p for p in entries + described if not (REPO / p).exists()]
    assert not missing, "docs/design.md's tree names what is not there: %s" % missing


def expected_names():
    """What the tree must name: packages and Python files of the module and plugin utils,
    action plugins, plugins/ directories, roles."""
    out = {p.relative_to(REPO).as_posix() + "/" for p in (REPO / "plugins").iterdir() if p.is_dir()}
    out |= {p.relative_to(REPO).as_posix() + "/" for p in (REPO / "roles").iterdir() if p.is_dir()}
    for top in ("plugins/module_utils", "plugins/plugin_utils"):
        for path in (REPO / top).rglob("*"):
            rel = path.relative_to(REPO).as_posix()
            if path.is_dir() and path.name != "__pycache__":
                out.add(rel + "/")
            elif path.suffix == ".py" and path.name != "__init__.py":
                out.add(rel)
    out |= {p.relative_to(REPO).as_posix() for p in (REPO / "plugins" / "action").glob("*.py")}
    return out


def test_the_tree_names_every_package_file_and_role():
    entries, described = _tree()
    named = set(entries) | set(described)
    missing = sorted(expected_names() - named)
    assert not missing, "add these to docs/design.md's tree: %s" % missing


@pytest.mark.parametrize("block, entries, described", [
    ("plugins/\n  _proc/            table.py signals.py\n                    bounded_fs.py\n",
     ["plugins/", "plugins/_proc/"], ["plugins/_proc/table.py", "plugins/_proc/signals.py", "plugins/_proc/bounded_fs.py"]),
    ("plugins/\n  _bench/  run.py workload/ (items.py: prompts)\nroles/\n  a/ b/   public roles\n",
     ["plugins/", "plugins/_bench/", "roles/", "roles/a/", "roles/b/"],
     ["plugins/_bench/workload/", "plugins/_bench/workload/items.py", "plugins/_bench/run.py"]),
])
def test_the_reader_places_names_by_indentation(block, entries, described):
    assert parse(block) == (entries, described)
