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
  - The dict holds the API key when one is set - keep it in a role or task variable, never in a fact.
author:
  - gpufleet.serving maintainers (@gpufleet)
options:
  _terms:
    description: The engine (V(sglang), V(vllm), or another engine of the registry).
    type: list
    elements: str
    required: true
  overrides:
    description: Settings (names without the C(ENGINE_server_) prefix) that win over the variables; null leaves one as it is.
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


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError("server_spec: give one engine, one of %s" % ", ".join(registry.names()))
        variables = variables or {}
        try:
            engine = registry.get(terms[0])
            given = spec.given_from(engine.name, variables, self._templar.template)
            overrides = self.get_option("overrides") or {}
            given.update({key: value for key, value in overrides.items() if value is not None})
            return [spec.server(engine, given)]
        except InvalidInput as exc:
            raise AnsibleLookupError("server_spec: %s" % exc.msg)
