# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Server groups: one server spanning several hosts, checked as a whole before any host is touched.

A host's `nodes` setting (settings.py) names the inventory hosts of the server it belongs to,
rank 0 first. plan_groups() reads every host's settings at once (the controller sees them all),
refuses a bad group naming it and the host, and returns what each member needs beside its own
settings: its `node` name and rank 0's address (`dist_addr`), from which server_plan composes
that node's command line (_engines/nodes.py).

The checks are the engines' own, moved before the teardown: SGLang asserts
`(tp_size * pp_size) % nnodes == 0` ("tp_size must be divisible by number of nodes") and refuses
`dp_size > 1` across nodes (sglang/srt/arg_groups/validation_hook.py check_server_args); vLLM
refuses a world size (dp * pp * tp) that `--nnodes` does not divide (vllm/engine/arg_utils.py
create_engine_config). Either would refuse only at launch, on each host, after the running servers
were torn down.

No I/O and no Ansible imports.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import nodes as _nodes
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _settings
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def group_name(members: list) -> str:
    """A group as messages name it: its hosts, rank 0 first."""
    return "server group [%s]" % ", ".join(members)


def _refuse(members: list, host: str, text: str) -> InvalidInput:
    exc = InvalidInput("%s, host %s: %s" % (group_name(members), host, text))
    exc.details.update(group=list(members), host=host)
    return exc


def size_from(extra_args: list, flags: tuple) -> int:
    """The value of the last of FLAGS in EXTRA_ARGS (`--flag N` or `--flag=N`), 1 when absent."""
    value = 1
    args = [str(a) for a in extra_args or []]
    for i, arg in enumerate(args):
        name, eq, rest = arg.partition("=")
        if name in flags:
            text = rest if eq else (args[i + 1] if i + 1 < len(args) else "")
            try:
                value = int(text)
            except ValueError:
                continue
    return value


def _switched_on(extra_args: list, flags: tuple) -> bool:
    """Whether the last of FLAGS (or its --no- form) in EXTRA_ARGS turns a switch on."""
    on = False
    for arg in (str(a) for a in extra_args or []):
        if arg in flags:
            on = True
        elif arg.startswith("--no-") and "--" + arg[5:] in flags:
            on = False
    return on


def topology(engine: str, values: dict) -> dict:
    """What a record and a report say of a server's shape: {"nodes", "nnodes", "tp_size", "pp_size", "dp_size",
    "ep_size"}, from its settings (VALUES: the server_spec lookup's dict); PP, DP and EP from its extra_args, as the
    engine reads them (_engines/nodes.py GROUP_SIZES), 1 where they are not given."""
    rules = _nodes.GROUP_SIZES.get(engine) or {"flags": {}}
    extra = values.get("extra_args")
    nodes = [str(n) for n in values.get("nodes") or []]
    sizes = {size: size_from(extra, rules["flags"].get(size, ())) for size in ("pp", "dp", "ep")}
    tp_size = int(values.get("tp_size") or 1)
    if rules.get("ep_switch"):
        sizes["ep"] = tp_size * sizes["dp"] if _switched_on(extra, rules["ep_switch"]) else 1
    return {"nodes": nodes, "nnodes": max(len(nodes), 1), "tp_size": tp_size, "pp_size": sizes["pp"],
            "dp_size": sizes["dp"], "ep_size": sizes["ep"]}


def check_sizes(engine: str, values: dict, members: list, host: str) -> int:
    """Refuse sizes the engine refuses across len(MEMBERS) nodes (_engines/nodes.py GROUP_SIZES); the GPUs
    each node runs."""
    prefix = engine + "_server_"
    title = _registry.get(engine).title
    count = len(members)
    rules = _nodes.GROUP_SIZES.get(engine) or {"flags": {}, "world": ("tp",), "indivisible": "", "no_dp": None}
    sizes = {"tp": int(values["tp_size"])}
    for size in ("pp", "dp"):
        sizes[size] = size_from(values.get("extra_args"), rules["flags"].get(size, ()))
    if rules["no_dp"] and sizes["dp"] > 1:
        raise _refuse(members, host, "%s refuses data-parallel replicas across nodes (dp size %d with %d nodes: \"%s\"): "
                                     "remove the dp size from %sextra_args"
                                     % (title, sizes["dp"], count, rules["no_dp"], prefix))
    world = 1
    for size in rules["world"]:
        world *= sizes[size]
    if world % count:
        what = " x ".join("%s %d" % ("tp_size" if s == "tp" else s, sizes[s]) for s in ("tp", "pp", "dp")
                          if s in rules["world"] and (s == "tp" or sizes[s] > 1))
        raise _refuse(members, host, "%s (%d GPUs) is not divisible by the group's %d nodes (%s refuses it: \"%s\"): "
                                     "set %stp_size to a multiple of %d"
                                     % (what, world, count, title, rules["indivisible"], prefix, count))
    per_node = world // count
    gpus = values.get("gpus") or []
    if gpus and len(gpus) != per_node:
        raise _refuse(members, host, "%sgpus lists %d GPUs but each node of the group runs %d (%d across %d nodes): "
                                     "list %d or leave it empty" % (prefix, len(gpus), per_node, world, count, per_node))
    return per_node


def _shown(setting: Any, value: Any) -> str:
    return "(hidden)" if setting.no_log else repr(value)


def check_agreement(engine: str, servers: dict, members: list) -> None:
    """Refuse a member whose settings differ from rank 0's where they must match."""
    first = servers[members[0]]
    for host in members[1:]:
        values = servers[host]
        if values.get("engine", engine) != first.get("engine", engine):
            raise _refuse(members, host, "it runs %s, rank 0 (%s) runs %s: every node of a group runs the same engine"
                          % (values.get("engine"), members[0], first.get("engine")))
        for setting in _settings.settings_for(engine):
            if setting.per_node or setting.name not in first:
                continue
            if values.get(setting.name) != first.get(setting.name):
                raise _refuse(members, host, "%s%s is %s here and %s on rank 0 (%s): the nodes of a group must agree "
                                             "on it" % (engine + "_server_", setting.name,
                                                        _shown(setting, values.get(setting.name)),
                                                        _shown(setting, first.get(setting.name)), members[0]))


def plan_groups(engine: str, servers: dict, hosts: list, addresses: dict | None = None) -> dict:
    """{host: {group, nodes, node, rank, nnodes, dist_addr, dist_port, gpus_per_node}} for every host of a
    server group, from SERVERS ({host: the settings of ENGINE's server there}, for every host of the play);
    HOSTS are the hosts the play reaches, ADDRESSES their ansible_host. A host of no group is left out.

    InvalidInput, naming the group and the host, for a group that cannot launch."""
    prefix = engine + "_server_"
    addresses = addresses or {}
    out: dict = {}
    for host in hosts:
        values = servers.get(host) or {}
        members = [str(m) for m in values.get("nodes") or []]
        if len(members) < 2:
            continue
        if host not in members:
            raise _refuse(members, host, "%snodes does not name this host: a host's nodes list the group it is in"
                          % prefix)
        for member in members:
            if members.count(member) > 1:
                raise _refuse(members, member, "listed %d times in %snodes: each host is one node"
                              % (members.count(member), prefix))
            if member not in hosts or member not in servers:
                raise _refuse(members, member, "not among the hosts of this play (%s): the group has %d nodes and the "
                              "play reaches %d of them; add the host to the play or drop it from %snodes"
                              % (", ".join(hosts), len(members), sum(m in hosts for m in members), prefix))
            theirs = [str(m) for m in servers[member].get("nodes") or []]
            if theirs != members:
                elsewhere = ("a server of its own (its %snodes is empty)" % prefix) if len(theirs) < 2 \
                    else group_name(theirs)
                raise _refuse(members, member, "in two groups: this one (from %s's %snodes) and %s; a host serves "
                              "one server of an engine" % (host, prefix, elsewhere))
        if members[0] != host:
            continue  # each group once, from its rank 0
        check_agreement(engine, servers, members)
        per_node = 0
        for member in members:
            per_node = check_sizes(engine, servers[member], members, member)
        first = servers[members[0]]
        addr = first.get("dist_addr") or addresses.get(members[0]) or members[0]
        for rank, member in enumerate(members):
            out[member] = {"group": group_name(members), "nodes": members, "node": member, "rank": rank,
                           "nnodes": len(members), "dist_addr": addr,
                           "dist_port": _nodes.port(engine, first), "gpus_per_node": per_node}
    return out


def node_settings(planned: dict) -> dict:
    """The settings a member's server_plan takes beside its own (PLANNED: one value of plan_groups())."""
    return {"node": planned["node"], "dist_addr": planned["dist_addr"], "dist_port": planned["dist_port"]}
