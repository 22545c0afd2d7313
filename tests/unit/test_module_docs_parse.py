# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every plugin's DOCUMENTATION, EXAMPLES and RETURN is YAML, checked in seconds (sanity's
validate-modules says so too, but a minute later and only in CI)."""

from __future__ import annotations

import ast
import pathlib

import pytest
import yaml

PLUGINS = pathlib.Path(__file__).resolve().parents[2] / "plugins"
FILES = sorted(p for kind in ("modules", "lookup", "doc_fragments") for p in (PLUGINS / kind).glob("*.py"))


def doc_strings(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # doc fragments: in a class
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if (isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "EXAMPLES", "RETURN")
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                yield target.id, node.value.value


@pytest.mark.parametrize("path", FILES, ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_documentation_is_yaml(path):
    for name, text in doc_strings(path):
        try:
            yaml.safe_load(text)
        except yaml.YAMLError as exc:
            pytest.fail("%s %s is not YAML: %s" % (path.name, name, exc))


def test_a_module_has_its_three_blocks():
    names = {name for name, unused in doc_strings(PLUGINS / "modules" / "gpu_release.py")}
    assert names == {"DOCUMENTATION", "EXAMPLES", "RETURN"}
