# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/_group/members.py: every host's variables resolved as the server_spec lookup resolves them,
planned as one (_server/group.py plan_groups), this host's entry returned; a bad group refused naming it."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._group.members import plan_for

GROUP = {"sglang_server_nodes": ["a", "b"], "sglang_server_tp_size": 16, "sglang_server_model_path": "/m"}


def hostvars(**per_host):
    return {"a": dict(GROUP, ansible_host="10.0.0.1", **per_host.get("a", {})),
            "b": dict(GROUP, ansible_host="10.0.0.2", **per_host.get("b", {})),
            "c": {"sglang_server_model_path": "/m", "ansible_host": "10.0.0.3"}}


def test_each_node_gets_its_rank_and_rank_0s_address():
    got = {h: plan_for("sglang", h, ["a", "b", "c"], hostvars(), lambda v: v) for h in ("a", "b", "c")}
    assert (got["a"]["rank"], got["b"]["rank"], got["c"]) == (0, 1, {})
    assert got["b"]["dist_addr"] == "10.0.0.1" and got["b"]["dist_port"] == 20000
    assert (got["b"]["gpus_per_node"], got["b"]["group"]) == (8, "server group [a, b]")


def test_values_go_through_the_template():
    variables = hostvars(b={"sglang_server_tp_size": "{{ 16 }}"})
    got = plan_for("sglang", "b", ["a", "b"], variables, lambda v: 16 if v == "{{ 16 }}" else v)
    assert got["nnodes"] == 2


def test_a_group_that_disagrees_is_refused_naming_the_group_and_the_host():
    with pytest.raises(InvalidInput) as err:
        plan_for("sglang", "a", ["a", "b"], hostvars(b={"sglang_server_tp_size": 8}), lambda v: v)
    assert err.value.msg.startswith("server group [a, b], host b: sglang_server_tp_size is 8 here and 16 on rank 0")


def test_a_request_sets_every_node_alike():
    # An experiment variant's topology: nodes and sizes the hosts' variables do not have, the same on each node.
    plain = {h: {"sglang_server_model_path": "/m", "ansible_host": "10.0.0.%d" % i} for i, h in enumerate("ab", 1)}
    request = {"engine": "sglang", "overrides": {"nodes": ["b", "a"], "tp_size": 16}}
    got = plan_for("sglang", "a", ["b", "a"], plain, lambda v: v, request)
    assert (got["rank"], got["dist_addr"], got["gpus_per_node"]) == (1, "10.0.0.2", 8)
    assert plan_for("sglang", "a", ["a", "b"], plain, lambda v: v) == {}
