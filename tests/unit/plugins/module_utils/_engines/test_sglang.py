# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_engines/sglang.py: the registry's list of SGLang speculative methods against the pinned
wheel's own sources: the members of the SpeculativeAlgorithm enum in
sglang/srt/speculative/spec_info.py (NONE means no speculative decoding) and _RESERVED_ALIASES in
sglang/srt/speculative/spec_registry.py. Read with `ast`, never imported
(tests/support/real_sources.py says where the sources are).
"""

from __future__ import annotations

import ast

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from tests.support.real_sources import sources


def _module(path):
    return ast.parse(path.read_text(encoding="utf-8"))


def _assignments(tree):
    """{name: value node} of the module's top-level assignments."""
    return {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def test_sglang_speculative_algorithms_are_the_wheels_enum_and_aliases():
    root, unused = sources("sglang")
    spec_info = _module(root / "srt" / "speculative" / "spec_info.py")
    enum = next(n for n in ast.walk(spec_info) if isinstance(n, ast.ClassDef) and n.name == "SpeculativeAlgorithm")
    members = [t.id for node in enum.body if isinstance(node, ast.Assign) for t in node.targets
               if isinstance(t, ast.Name) and ast.unparse(node.value) == "auto()"]
    aliases = _assignments(_module(root / "srt" / "speculative" / "spec_registry.py"))["_RESERVED_ALIASES"]
    real = [m for m in members if m != "NONE"] + sorted(ast.literal_eval(aliases.args[0]))
    assert "EAGLE3" in real and "NEXTN" in real
    assert sorted(registry.get("sglang").speculative_methods) == sorted(real)
