# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: engine_patterns
short_description: An inference engine's kill patterns, for gpufleet.serving.gpu_release
version_added: 0.1.0
description:
  - Returns the command-line regexes that match every process of the named engines (their servers,
    entry points and the workers that retitle themselves), in the order given.
  - The one place these regexes are defined is C(ENGINE_PATTERNS) in the collection's
    C(plugins/module_utils/_gpu/patterns.py); the P(gpufleet.serving.sglang_server#role) role's
    C(sglang_server_release_patterns) and the C(reset.yml) playbook read them through this lookup.
  # BEGIN GENERATED engine-patterns (scripts/gen_docs.py)
  - 'V(sglang): C(sglang::), C(sglang\.launch_server), C(sglang\.bench), C(sglang\.data_parallel),
    C(sglang\.srt), C(sgl_diffusion::), C(sglang serve).'
  - 'V(vllm): C(VLLM::), C(vllm\.entrypoints), C(vllm serve).'
  # END GENERATED engine-patterns
author:
  - gpufleet.serving maintainers (@gpufleet)
options:
  _terms:
    description: Engine names; V(any) stands for every engine (each regex once).
    type: list
    elements: str
    required: true
seealso:
  - module: gpufleet.serving.gpu_release
"""

EXAMPLES = r"""
- name: Kill SGLang and vLLM servers, then sweep and verify every GPU
  gpufleet.serving.gpu_release:
    patterns: "{{ query('gpufleet.serving.engine_patterns', 'sglang', 'vllm') }}"
"""

RETURN = r"""
_raw:
  description: The regexes of every engine named, one list element each.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import engine_patterns


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if not terms:
            raise AnsibleLookupError("engine_patterns: name at least one engine, e.g. query('gpufleet.serving.engine_patterns', '%s')"
                                     % _registry.DEFAULT)
        try:
            return engine_patterns([str(t) for t in terms])
        except InvalidInput as exc:
            raise AnsibleLookupError("engine_patterns: %s" % exc.msg)
