# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: server_group
short_description: This host's place in a server that spans hosts, checked against every host of the play
version_added: 0.2.0
description:
  - Reads the C(ENGINE_server_*) variables of every host of the play (O(hosts), default C(ansible_play_hosts)), plans
    the server groups their C(ENGINE_server_nodes) describe and returns this host's entry - C(group) (its name in
    messages), C(nodes), C(node), C(rank), C(nnodes), C(dist_addr) (rank 0's address, its C(ansible_host) unless
    C(ENGINE_server_dist_addr) is set), C(dist_port) and C(gpus_per_node) - or an empty dict for a host in no group.
  - Fails, naming the group and the host, before any host is touched, when the nodes of a group disagree on a setting
    that must match, a host is in two groups, a group names a host the play does not reach, or its sizes do not
    divide across its nodes (docs/multinode.md).
author:
  - gpufleet.serving maintainers (@gpufleet)
options:
  _terms:
    description: The engine (V(sglang) or V(vllm)).
    type: list
    elements: str
    required: true
  hosts:
    description: The hosts of the play; default C(ansible_play_hosts).
    type: list
    elements: str
  planned:
    description:
      - This node's server group as the P(gpufleet.serving.server_spec#lookup) lookup planned it (its C(group)). When
        the server's request set the nodes (an experiment variant's topology, C(requested)), that entry is returned as
        it is (planned over those nodes, the variant's settings on each); otherwise the play's hosts are planned.
    type: dict
    default: {}
seealso:
  - module: gpufleet.serving.server_ranks
"""

EXAMPLES = r"""
- name: This host's rank in its SGLang server group
  ansible.builtin.debug:
    msg: "{{ lookup('gpufleet.serving.server_group', 'sglang').rank | default('not in a group') }}"
"""

RETURN = r"""
_raw:
  description: This host's entry of the plan, or an empty dict.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._group.members import plan_for


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        planned = self.get_option("planned") or {}
        if planned.get("requested"):
            return [planned] * len(terms)
        hosts = self.get_option("hosts") or variables.get("ansible_play_hosts") or [variables["inventory_hostname"]]
        try:
            return [plan_for(term, variables["inventory_hostname"], list(hosts), variables["hostvars"],
                             self._templar.template) for term in terms]
        except InvalidInput as exc:
            raise AnsibleLookupError("server_group: %s" % exc.msg)
