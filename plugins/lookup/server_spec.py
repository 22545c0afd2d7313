# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: server_spec
short_description: One server's settings as one dict, from the host's ENGINE_server_* variables
version_added: 0.2.0
description:
  - Returns the dict the internal C(_server) role runs a server from (its C(server_spec) input) - every setting of
    the engine's server, from the play's C(ENGINE_server_NAME) variables (for example C(sglang_server_port)), with
    O(overrides) over them, each left unset taking its default.
  - The settings, their types, defaults and the engines each applies to are one table
    (C(plugins/module_utils/_engines/settings.py)); the public roles' argument specs, defaults and READMEs are
    generated from it. A value of the wrong type fails, naming the variable.
  - The dict also holds the engine's C(engine), C(title), C(vars_prefix) and C(tested_version), and
    C(speculative_on) (whether any speculative setting is given).
  - On a node of a server group (C(ENGINE_server_nodes)), the node settings the internal C(_server) role planned for
    the host (its C(_server_group) fact, from the P(gpufleet.serving.server_group#lookup) lookup) - C(node),
    C(dist_addr) and C(dist_port) - go over the variables. Before the role planned it (an experiment's plan), or
    when the request's overrides set C(nodes) (an experiment variant's topology), the lookup plans the group itself
    over the play's hosts (or those nodes, the request's settings on each); the dict then holds the node's entry
    as C(group).
  - The dict holds the API key when one is set - keep it in a role or task variable, never in a fact.
author:
  - gpufleet.serving maintainers (@gpufleet)
options:
  _terms:
    description:
      - The engine (V(sglang), V(vllm), or another engine of the registry), one dict per server.
      - Or one request per server, a dict with C(engine) and optionally C(overrides), C(drafter) and C(env), as the
        options below (an experiment variant's C(server_request)); the options then apply over each request's.
        A list of requests gives one dict per request, in order (use C(query)).
    type: list
    elements: raw
    required: true
  overrides:
    description:
      - Settings (names without the C(ENGINE_server_) prefix) that win over the variables and O(drafter); null leaves
        one as it is. An empty C(speculative) is none (a base server).
    type: dict
    default: {}
  drafter:
    description:
      - Run the server with the host's EAGLE-3 drafter - its C(eagle_drafter_*) variables (the
        P(gpufleet.serving.eagle_drafter#role) role's, each left unset taking that role's default) become the
        server's C(speculative) settings and the memory and extra settings they override, where the engine has them.
    type: bool
    default: false
  env:
    description: Environment variables merged over the server's C(env) (the variables', or O(overrides)'s).
    type: dict
    default: {}
seealso:
  - module: gpufleet.serving.server_plan
"""

EXAMPLES = r"""
- name: Run an SGLang server from the host's sglang_server_* variables, stopped whatever they say
  ansible.builtin.include_role:
    name: gpufleet.serving._server
  vars:
    server_spec: "{{ lookup('gpufleet.serving.server_spec', 'sglang', overrides={'state': 'stopped'}) }}"
"""

RETURN = r"""
_raw:
  description: One dict of the server's settings, with C(engine), C(title), C(vars_prefix), C(tested_version) and C(speculative_on).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as spec
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group
from ansible_collections.gpufleet.serving.plugins.plugin_utils._group import members


class LookupModule(LookupBase):

    def _server(self, variables, term):
        request = term if isinstance(term, dict) else {"engine": term}
        engine = registry.get(request.get("engine"))
        if self.get_option("drafter"):
            request = dict(request, drafter=True)
        given = members.requested(engine.name, variables, self._templar.template, request, self.get_option("overrides"))
        planned = self._group(engine, variables, given, request) if len(given.get("nodes") or []) > 1 else {}
        if planned:
            given.update(group.node_settings(planned))
        env = dict(request.get("env") or {}, **(self.get_option("env") or {}))
        if env:
            given["env"] = dict(given.get("env") or {}, **env)
        out = spec.server(engine, given)
        if planned:
            out["group"] = planned
        return out

    def _group(self, engine, variables, given, request):
        """This node's entry of its server group. Nodes the request sets (an experiment variant's topology) are
        planned here over those hosts, the request's settings on each; nodes from the variables are the _server
        role's _server_group fact (the server_group lookup over the play) when it was planned for this engine and
        these nodes, else planned here over the play's hosts. {} where the variables name no play."""
        overrides = dict(request.get("overrides") or {}, **(self.get_option("overrides") or {}))
        planned = variables.get("_server_group") or {}
        if "nodes" not in overrides and planned.get("engine") == engine.name and planned.get("nodes") == list(given["nodes"]):
            return planned
        if "hostvars" not in variables or "inventory_hostname" not in variables:
            return {}
        hosts = list(given["nodes"]) if "nodes" in overrides \
            else list(variables.get("ansible_play_hosts_all") or variables.get("ansible_play_hosts") or [])
        found = members.plan_for(engine.name, variables["inventory_hostname"], hosts, variables["hostvars"],
                                 self._templar.template, dict(request, overrides=overrides))
        return dict(found, engine=engine.name, requested="nodes" in overrides) if found else {}

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        # A list of requests given as one term: one server each.
        if len(terms) == 1 and isinstance(terms[0], list):
            terms = terms[0]
        if not terms:
            raise AnsibleLookupError("server_spec: give an engine, one of %s, or server requests" % ", ".join(registry.names()))
        try:
            return [self._server(variables or {}, term) for term in terms]
        except InvalidInput as exc:
            raise AnsibleLookupError("server_spec: %s" % exc.msg)
