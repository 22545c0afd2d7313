# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Server groups planned as a whole: each node's command line, and the refusals before any host is touched."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group
from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan as pl

HOSTS = ["gpu-a", "gpu-b", "gpu-c"]
PAIR = ["gpu-a", "gpu-b"]


def fleet(engine="sglang", members=None, hosts=None, **more):
    """{host: resolved settings} with MEMBERS (PAIR) in one group among HOSTS (HOSTS) (MORE: {host: overrides})."""
    members, hosts = PAIR if members is None else members, HOSTS if hosts is None else hosts
    out = {}
    for host in hosts:
        given = {"model_path": "/models/kimi", "tp_size": 16 if host in members else 8,
                 "nodes": list(members) if host in members else []}
        given.update(more.get(host.replace("-", "_"), {}))
        out[host] = dict(settings.resolve(engine, given), engine=engine)
    return out


def test_a_group_is_planned_rank_by_position_with_rank_0s_address():
    planned = group.plan_groups("sglang", fleet(), HOSTS, {"gpu-a": "10.0.0.1"})
    assert sorted(planned) == PAIR  # gpu-c serves alone
    assert [planned[h]["rank"] for h in PAIR] == [0, 1]
    assert planned["gpu-b"] == {"group": "server group [gpu-a, gpu-b]", "nodes": PAIR, "node": "gpu-b", "rank": 1,
                                "nnodes": 2, "dist_addr": "10.0.0.1", "dist_port": 20000, "gpus_per_node": 8}
    assert group.node_settings(planned["gpu-b"]) == {"node": "gpu-b", "dist_addr": "10.0.0.1", "dist_port": 20000}


def test_dist_addr_wins_over_ansible_host_and_the_name_is_the_last_resort():
    servers = fleet(gpu_a={"dist_addr": "ib0.gpu-a"}, gpu_b={"dist_addr": "ib0.gpu-a"})
    assert group.plan_groups("sglang", servers, HOSTS, {"gpu-a": "10.0.0.1"})["gpu-b"]["dist_addr"] == "ib0.gpu-a"
    assert group.plan_groups("sglang", fleet(), HOSTS)["gpu-a"]["dist_addr"] == "gpu-a"


def _argv(engine, servers, planned, host):
    p = dict(servers[host], **group.node_settings(planned[host]))
    p.update(instance="%s-1" % engine, python="/venv/bin/python3", supervisor="process")
    return pl.compose(p)["argv"]


def test_each_nodes_command_line_sglang():
    servers = fleet()
    planned = group.plan_groups("sglang", servers, HOSTS, {"gpu-a": "10.0.0.1"})
    tails = {h: _argv("sglang", servers, planned, h) for h in PAIR}
    for rank, host in enumerate(PAIR):
        argv = tails[host]
        at = argv.index("--nnodes")
        assert argv[at:at + 6] == ["--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "10.0.0.1:20000"]
        assert argv[argv.index("--tp-size") + 1] == "16"  # a total across the nodes
    alone = _argv("sglang", servers, {"gpu-c": {"node": "gpu-c", "dist_addr": "", "dist_port": None}}, "gpu-c")
    assert "--nnodes" not in alone and "--dist-init-addr" not in alone


def test_each_nodes_command_line_vllm():
    servers = fleet("vllm", gpu_a={"dist_timeout": 120}, gpu_b={"dist_timeout": 120})
    planned = group.plan_groups("vllm", servers, HOSTS, {"gpu-a": "10.0.0.1"})
    head, other = (_argv("vllm", servers, planned, h) for h in PAIR)
    for rank, argv in enumerate((head, other)):
        at = argv.index("--distributed-timeout-seconds")
        assert argv[at:at + 10] == ["--distributed-timeout-seconds", "120", "--nnodes", "2", "--node-rank", str(rank),
                                    "--master-addr", "10.0.0.1", "--master-port", "29501"]
    assert "--headless" not in head and "--headless" in other


@pytest.mark.parametrize("engine, more, message", [
    ("sglang", {"gpu_b": {"tp_size": 8}},
     r"server group \[gpu-a, gpu-b\], host gpu-b: sglang_server_tp_size is 8 here and 16 on rank 0 \(gpu-a\): "
     r"the nodes of a group must agree on it"),
    ("vllm", {"gpu_b": {"api_key": "other"}, "gpu_a": {"api_key": "k"}},
     r"host gpu-b: vllm_server_api_key is \(hidden\) here and \(hidden\) on rank 0"),
    ("sglang", {"gpu_a": {"tp_size": 15}, "gpu_b": {"tp_size": 15}},
     r"host gpu-a: tp_size 15 \(15 GPUs\) is not divisible by the group's 2 nodes \(SGLang refuses it: "
     r"\"tp_size must be divisible by number of nodes\"\): set sglang_server_tp_size to a multiple of 2"),
    ("vllm", {"gpu_a": {"tp_size": 3, "extra_args": ["-pp", "3"]}, "gpu_b": {"tp_size": 3, "extra_args": ["-pp", "3"]}},
     r"tp_size 3 x pp 3 \(9 GPUs\) is not divisible by the group's 2 nodes \(vLLM refuses it"),
    ("sglang", {"gpu_a": {"extra_args": ["--dp-size=2"]}, "gpu_b": {"extra_args": ["--dp-size=2"]}},
     r"host gpu-a: SGLang refuses data-parallel replicas across nodes \(dp size 2 with 2 nodes"),
    ("sglang", {"gpu_b": {"gpus": [0, 1, 2, 3]}},
     r"host gpu-b: sglang_server_gpus lists 4 GPUs but each node of the group runs 8 \(16 across 2 nodes\)"),
    ("sglang", {"gpu_b": {"nodes": ["gpu-b", "gpu-c"]}, "gpu_c": {"nodes": ["gpu-b", "gpu-c"], "tp_size": 16}},
     r"server group \[gpu-a, gpu-b\], host gpu-b: in two groups: this one \(from gpu-a's sglang_server_nodes\) and "
     r"server group \[gpu-b, gpu-c\]"),
    ("sglang", {"gpu_b": {"nodes": []}},
     r"host gpu-b: in two groups: this one \(from gpu-a's sglang_server_nodes\) and a server of its own"),
    ("sglang", {"gpu_a": {"nodes": ["gpu-a", "gpu-a"]}},
     r"server group \[gpu-a, gpu-a\], host gpu-a: listed 2 times in sglang_server_nodes"),
])
def test_a_bad_group_is_refused_naming_it_and_the_host(engine, more, message):
    with pytest.raises(InvalidInput, match=message) as caught:
        group.plan_groups(engine, fleet(engine, **more), HOSTS)
    assert caught.value.details["host"] in HOSTS and caught.value.details["group"]


def test_a_group_larger_than_the_play_is_refused_naming_the_missing_host():
    members = ["gpu-a", "gpu-b", "gpu-d", "gpu-e"]
    with pytest.raises(InvalidInput, match=r"server group \[gpu-a, gpu-b, gpu-d, gpu-e\], host gpu-d: not among the "
                                           r"hosts of this play \(gpu-a, gpu-b, gpu-c\): the group has 4 nodes and "
                                           r"the play reaches 2 of them"):
        group.plan_groups("sglang", fleet(members=members), HOSTS)


def test_a_host_whose_nodes_leave_it_out_is_refused():
    servers = fleet(gpu_c={"nodes": PAIR})
    with pytest.raises(InvalidInput, match=r"host gpu-c: sglang_server_nodes does not name this host"):
        group.plan_groups("sglang", servers, HOSTS)


@pytest.mark.parametrize("args, flags, value", [
    (["--pp-size", "2"], ("--pp-size",), 2), (["--pipeline-parallel-size=4"], ("--pipeline-parallel-size",), 4),
    ([], ("--pp-size",), 1), (["--pp-size"], ("--pp-size",), 1), (["--pp-size", "x"], ("--pp-size",), 1),
])
def test_size_from_extra_args(args, flags, value):
    assert group.size_from(args, flags) == value


@pytest.mark.parametrize("engine, values, shape", [
    ("sglang", {"tp_size": 16, "nodes": PAIR}, (2, 16, 1, 1, 1)),
    ("sglang", {"tp_size": 16, "nodes": PAIR, "extra_args": ["--pp-size", "2", "--ep-size=16"]}, (2, 16, 2, 1, 16)),
    ("sglang", {"tp_size": 8, "extra_args": ["--expert-parallel-size", "8", "--data-parallel-size", "2"]}, (1, 8, 1, 2, 8)),
    ("vllm", {"tp_size": 8, "nodes": PAIR, "extra_args": ["-dp", "2", "--enable-expert-parallel"]}, (2, 8, 1, 2, 16)),
    ("vllm", {"tp_size": 8, "nodes": PAIR, "extra_args": ["-ep", "--no-enable-expert-parallel", "-pp", "2"]},
     (2, 8, 2, 1, 1)),
])
def test_the_topology_names_nodes_and_the_tp_pp_dp_ep_sizes_as_the_engine_reads_them(engine, values, shape):
    found = group.topology(engine, values)
    assert (found["nnodes"], found["tp_size"], found["pp_size"], found["dp_size"], found["ep_size"]) == shape
    assert found["nodes"] == list(values.get("nodes") or [])
