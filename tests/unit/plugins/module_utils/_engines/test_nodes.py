# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One node of a server group: the derived --nnodes, --node-rank and rank 0's address, per engine."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import nodes, settings
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

GROUP = {"nodes": ["gpu-a", "gpu-b"], "dist_addr": "10.0.0.1", "dist_port": None}


@pytest.mark.parametrize("node, sglang, vllm", [
    ("gpu-a", {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:20000"},
     {"nnodes": 2, "node_rank": 0, "master_addr": "10.0.0.1", "master_port": 29501, "headless": False}),
    ("gpu-b", {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.1:20000"},
     {"nnodes": 2, "node_rank": 1, "master_addr": "10.0.0.1", "master_port": 29501, "headless": True}),
])
def test_each_node_derives_its_rank_and_rank_0s_address(node, sglang, vllm):
    values = dict(GROUP, node=node)
    assert settings.derived("sglang", values) == sglang
    assert settings.derived("vllm", values) == vllm


@pytest.mark.parametrize("group", [{}, {"nodes": []}, {"nodes": ["gpu-a"], "node": "other"}])
def test_one_host_derives_nothing(group):
    assert set(settings.derived("sglang", group).values()) == {None}
    assert settings.derived("vllm", group) == {"nnodes": None, "node_rank": None, "master_addr": None,
                                               "master_port": None, "headless": False}


def test_ipv6_goes_in_brackets_and_a_given_port_wins():
    values = dict(GROUP, node="gpu-b", dist_addr="fd00::1", dist_port=5000)
    assert nodes.dist_init_addr("sglang", values) == "[fd00::1]:5000"
    assert nodes.master_port("vllm", values) == 5000


def test_a_node_outside_the_group_and_a_group_without_address_are_refused():
    with pytest.raises(InvalidInput, match=r"node 'gpu-z' is not one of the server group's nodes \['gpu-a', 'gpu-b'\]: "
                                           r"set sglang_server_node"):
        settings.derived("sglang", dict(GROUP, node="gpu-z"))
    with pytest.raises(InvalidInput, match=r"vllm_server_dist_addr is empty: a server group needs rank 0's address "
                                           r"\(gpu-a\)"):
        settings.derived("vllm", dict(GROUP, node="gpu-a", dist_addr=""))
