# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One node of a server that spans hosts: its rank, the group's size, rank 0's address.

The group settings (settings.py: nodes, node, dist_addr, dist_port) say which hosts one server
spans (rank = position in `nodes`), which of them this host is and where rank 0 listens for the
rendezvous; the derived settings (the engines' --nnodes, --node-rank, --dist-init-addr,
--master-addr, --master-port, --headless) are computed here from them. A server with fewer than
two nodes is a plain one-host server: every derived value is None and its command line is the one
it always was.

No I/O and no Ansible imports; _server/group.py checks a whole group before any host is touched.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# The rendezvous port when none is given: vLLM's own --master-port default (vllm/config/parallel.py
# ParallelConfig.master_port); SGLang has none (--dist-init-addr is HOST:PORT), so the collection picks one.
DEFAULT_PORTS = {"sglang": 20000, "vllm": 29501}


# What each engine refuses of a group's sizes, checked before any host is touched (_server/group.py):
# the flags of the sizes the settings lack (read from extra_args), which sizes multiply into the GPUs
# of the group, its words when nnodes does not divide them, and its words for data-parallel replicas
# across nodes where it refuses them.
# SGLang 0.5.23: sglang/srt/arg_groups/fields/parallel.py (the aliases); validation_hook.py
# check_server_args asserts (tp_size * pp_size) % nnodes == 0 and no dp_size > 1 with nnodes != 1.
# vLLM 0.33.0: vllm/engine/arg_utils.py add_cli_args (the flags) and create_engine_config (the world
# size dp * pp * tp that --nnodes must divide).
# The expert-parallel size, for the topology records name (_server/group.py topology): SGLang's --ep-size
# (fields/parallel.py, aliases --expert-parallel-size and --ep); vLLM's switch --enable-expert-parallel (-ep),
# with which every GPU of the flattened TP x DP group owns its experts (model_executor/layers/fused_moe/config.py:
# ep_size = tp_size x dp_size).
GROUP_SIZES = {
    "sglang": {"flags": {"pp": ("--pp-size", "--pipeline-parallel-size"), "dp": ("--dp-size", "--data-parallel-size"),
                         "ep": ("--ep-size", "--expert-parallel-size", "--ep")},
               "world": ("tp", "pp"), "indivisible": "tp_size must be divisible by number of nodes",
               "no_dp": "multi-node data-parallel replicas are not supported; use attention DP"},
    "vllm": {"flags": {"pp": ("--pipeline-parallel-size", "-pp"), "dp": ("--data-parallel-size", "-dp")},
             "ep_switch": ("--enable-expert-parallel", "-ep"),
             "world": ("dp", "pp", "tp"), "indivisible": "--nnodes must evenly divide the total world size",
             "no_dp": None},
}

# The title of one rank's process, which the per-node probe counts (_server/group_ranks.py): SGLang
# 0.5.23 names its schedulers sglang::scheduler_TP<r> (srt/managers/scheduler.py, setproctitle); vLLM
# 0.33.0 its workers VLLM::Worker_TP<r> (v1/executor/multiproc_executor.py).
RANK_TITLES = {"sglang": ("sglang::scheduler",), "vllm": ("VLLM::Worker",)}


def spans_hosts(values: dict) -> bool:
    return len(values.get("nodes") or []) > 1


def nnodes(engine: str, values: dict) -> int | None:
    return len(values["nodes"]) if spans_hosts(values) else None


def rank(engine: str, values: dict) -> int | None:
    """This node's rank: the position of `node` in `nodes`; InvalidInput when it is not there."""
    if not spans_hosts(values):
        return None
    nodes, node = list(values["nodes"]), values.get("node") or ""
    if node not in nodes:
        raise InvalidInput("node %r is not one of the server group's nodes %s: set {prefix}node to this host's name "
                           "in {prefix}nodes (the roles pass inventory_hostname)".format(prefix=engine + "_server_")
                           % (node, nodes))
    return nodes.index(node)


def address(engine: str, values: dict) -> str | None:
    """Rank 0's address as the other nodes reach it; InvalidInput when the group has none."""
    if not spans_hosts(values):
        return None
    addr = values.get("dist_addr") or ""
    if not addr:
        raise InvalidInput("%sdist_addr is empty: a server group needs rank 0's address (%s), as the other nodes "
                           "reach it" % (engine + "_server_", values["nodes"][0]))
    return addr


def host_port(host: str, port: Any) -> str:
    """HOST:PORT, an IPv6 address in brackets (SGLang's NetworkAddress.parse refuses a bare one:
    sglang/srt/utils/network.py)."""
    return "%s:%s" % ("[%s]" % host if ":" in host else host, port)


def dist_init_addr(engine: str, values: dict) -> str | None:
    """SGLang's --dist-init-addr HOST:PORT, the same on every node (rank 0 hosts the torch TCP
    rendezvous there: sglang/srt/distributed/bootstrap.py _resolve_dist_init_method)."""
    addr = address(engine, values)
    return None if addr is None else host_port(addr, port(engine, values))


def port(engine: str, values: dict) -> int:
    """The rendezvous port: dist_port, else the engine's default."""
    given = values.get("dist_port")
    return DEFAULT_PORTS[engine] if given is None else int(given)


def master_port(engine: str, values: dict) -> int | None:
    return port(engine, values) if spans_hosts(values) else None


def headless(engine: str, values: dict) -> bool:
    """vLLM's --headless on every node but rank 0 (vllm/entrypoints/cli/serve.py run_headless: no API
    server; a node with node_rank_within_dp > 0 runs only its workers)."""
    return spans_hosts(values) and rank(engine, values) > 0
