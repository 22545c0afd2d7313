# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_experiment/schema.py: the server options of a role from its argument spec (without the keys the
experiment sets itself), server_plan's speculative suboptions and the benchmark options read from the
collection's files, and a value's type problem in words."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import schema


def test_the_options_come_from_the_collections_own_specs():
    server = schema.server_options("sglang_server")
    assert server["tp_size"]["type"] == "int" and "model_path" in server
    assert not set(server) & set(schema.SERVER_OWN_KEYS)
    assert "algorithm" in schema.speculative_options()
    assert "levels" in schema.benchmark_options()


@pytest.mark.parametrize("value, spec, problem", [
    (8, {"type": "int"}, None),
    (None, {"type": "int"}, None),
    ("8", {"type": "int"}, "must be a whole number, not str '8'"),
    (True, {"type": "int"}, "must be a whole number, not bool True"),
    (0.5, {"type": "float"}, None),
    ("yes", {"type": "bool"}, "must be true or false, not str 'yes'"),
    (["--x", 512], {"type": "list", "elements": "str"}, None),
    (["--x", [1]], {"type": "list", "elements": "str"}, "item 1 must be a string, not list [1]"),
    ("fp8", {"type": "str", "choices": ["auto", "fp8_e4m3"]}, "must be one of 'auto', 'fp8_e4m3', not 'fp8'"),
    ({"a": 1}, {"type": "raw"}, None),
])
def test_type_problems_in_words(value, spec, problem):
    assert schema.type_problem(value, spec) == problem
