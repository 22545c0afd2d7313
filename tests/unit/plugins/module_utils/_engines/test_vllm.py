# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_engines/vllm.py: the check of a user's speculative config; the registry's list of vLLM speculative methods against the pinned wheel's own
sources: the strings of the Literal SpeculativeMethod in vllm/config/speculative.py, with the
Literal aliases it names (EagleModelTypes, MTPModelTypes, ...) followed. Read with `ast`, never
imported (tests/support/real_sources.py says where the sources are).
"""

from __future__ import annotations

import ast

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry, vllm
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
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


@pytest.mark.parametrize("config, problem", [
    ({"method": "eagle3", "model": "/d", "num_speculative_tokens": 3}, None),
    ({"method": "eagle3", "model": "/d"}, None),
    ({"method": "eagle3", "model": "/d", "num_speculative_tokens": "2"}, None),
    ({"method": "ngram", "num_speculative_tokens": 4}, None),
    ({"method": "eagle3", "num_speculative_tokens": 3}, "method eagle3 needs `model`"),
    ({"method": "draft_model", "model": ""}, "method draft_model needs `model`"),
    ({"method": "eagle3", "model": "/d", "num_speculative_tokens": 0}, "at least 1"),
    ({"method": "eagle3", "model": "/d", "num_speculative_tokens": None}, "leave the key out, not null"),
    ({"method": "eagle3", "model": "/d", "num_speculative_tokens": True}, "a whole number"),
    ({"method": "mtp", "num_speculative_tokens": 1.5}, "a whole number"),
])
def test_the_speculative_config_names_a_drafter_and_a_token_count(config, problem):
    """What vLLM would refuse only at launch, refused with the config and what to change."""
    if problem is None:
        vllm.check_speculative_config(config)
        return
    with pytest.raises(InvalidInput) as caught:
        vllm.check_speculative_config(config)
    assert problem in caught.value.msg and caught.value.msg.startswith("speculative_config {")
