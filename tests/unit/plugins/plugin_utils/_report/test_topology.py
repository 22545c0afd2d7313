# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/topology.py: a server's shape in words, across hosts or on one, from what its record keeps."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import topology


@pytest.mark.parametrize("shape, words", [
    ({"nodes": ["a", "b"], "nnodes": 2, "tp_size": 16, "pp_size": 1, "dp_size": 1, "ep_size": 16},
     "one server across a, b (nnodes 2, tp_size 16, pp_size 1, dp_size 1, ep_size 16), measured at rank 0"),
    ({"nodes": ["a", "b"], "nnodes": 2, "tp_size": 16}, "one server across a, b (nnodes 2, tp_size 16), measured at rank 0"),
    ({"nodes": ["a"], "nnodes": 1, "tp_size": 8, "pp_size": 1, "dp_size": 2, "ep_size": 8},
     "one host (nnodes 1, tp_size 8, pp_size 1, dp_size 2, ep_size 8)"),
])
def test_the_line_names_the_nodes_and_every_size_the_record_holds(shape, words):
    assert topology.line(shape) == words
