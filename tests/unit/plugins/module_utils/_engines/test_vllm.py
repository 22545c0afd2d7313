# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_engines/vllm.py: the registry's list of vLLM speculative methods against the pinned wheel's own
sources: the strings of the Literal SpeculativeMethod in vllm/config/speculative.py, with the
Literal aliases it names (EagleModelTypes, MTPModelTypes, ...) followed. Read with `ast`, never
imported (tests/support/real_sources.py says where the sources are).
"""

from __future__ import annotations

import ast

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from tests.support.real_sources import vllm_sources


def _module(path):
    return ast.parse(path.read_text(encoding="utf-8"))


def _assignments(tree):
    """{name: value node} of the module's top-level assignments."""
    return {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def _literal_strings(node, names):
    """The strings a Literal[...] node allows, following names of other Literal aliases."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        return _literal_strings(names[node.id], names)
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal":
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [s for item in items for s in _literal_strings(item, names)]
    raise AssertionError("not a Literal: %s" % ast.unparse(node))


def test_vllm_speculative_methods_are_the_wheels_speculative_method_literal():
    names = _assignments(_module(vllm_sources() / "config" / "speculative.py"))
    real = _literal_strings(names["SpeculativeMethod"], names)
    assert len(real) == len(set(real)) > 10
    assert sorted(registry.get("vllm").speculative_methods) == sorted(real)
