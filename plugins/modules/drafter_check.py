#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: drafter_check
short_description: Check that an EAGLE-3 drafter fits its target model
version_added: 0.1.0
description:
  - Reads the drafter's and the target's C(config.json) on the host and checks what would otherwise
    fail only after a long model load - an EAGLE-3 draft class that SGLang 0.5.23 registers
    (C(LlamaForCausalLMEagle3), C(Eagle3DeepseekV2ForCausalLM); an EAGLE-1/2 drafter such as
    C(LlamaForCausalLMEagle) is refused with a message saying so; with O(engine=vllm), one that vLLM 0.33.0's method
    C(eagle3) loads), equal C(hidden_size) and
    C(vocab_size), C(draft_vocab_size) not above the vocabulary, every auxiliary layer id
    (C(eagle_config.eagle_aux_hidden_state_layer_ids)) below the target's C(num_hidden_layers),
    and the speculative numbers (all three or none; with top-k 1, draft tokens = steps + 1).
  - A failure names the field and both values. Reads only; changes nothing.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.INFO_MODULE
options:
  draft_model_path:
    description: Directory of the drafter (with C(config.json)).
    type: path
    required: true
  target_model_path:
    description: Directory of the target model (with C(config.json)).
    type: path
    required: true
  engine:
    description:
      - The engine that loads the drafter, which decides the EAGLE-3 architectures accepted - V(sglang) (SGLang 0.5.23's
        two draft classes) or V(vllm) (vLLM 0.33.0 with C(--speculative-config) method C(eagle3), which renames an
        architecture C(X) to C(Eagle3X) unless it starts or ends with C(Eagle3), then looks it up in its registry).
    type: str
    # BEGIN GENERATED engine-names (scripts/gen_docs.py)
    choices:
      - sglang
      - vllm
    # END GENERATED engine-names
    default: sglang
  num_steps:
    description: C(--speculative-num-steps).
    type: int
  eagle_topk:
    description:
      - C(--speculative-eagle-topk).
      - With O(engine=vllm) and O(num_steps) set, 1 is checked instead (vLLM's EAGLE drafts a chain).
    type: int
  num_draft_tokens:
    description:
      - C(--speculative-num-draft-tokens).
      - With O(engine=vllm) and O(num_steps) set, O(num_steps) + 1 is checked instead (vLLM's chain).
    type: int
"""

EXAMPLES = r"""
- name: Refuse a drafter that does not fit Kimi-K2.5
  gpufleet.serving.drafter_check:
    draft_model_path: /models/AQ-MedAI-Kimi-K2-Instruct-eagle3
    target_model_path: /models/Kimi-K2.5-INT4
    num_steps: 3
    eagle_topk: 1
    num_draft_tokens: 4
"""

RETURN = r"""
drafter:
  description: The drafter fields that were checked.
  returned: success
  type: dict
  sample:
    architectures: [LlamaForCausalLMEagle3]
    hidden_size: 7168
    vocab_size: 163840
    draft_vocab_size: 32000
    aux_layer_ids: [1, 29, 57]
    target_num_hidden_layers: 61
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server.drafter import check_drafter


def main():
    module = AnsibleModule(
        argument_spec=dict(
            draft_model_path=dict(type="path", required=True),
            target_model_path=dict(type="path", required=True),
            engine=dict(type="str", default=registry.DEFAULT, choices=registry.names()),
            num_steps=dict(type="int"),
            eagle_topk=dict(type="int"),
            num_draft_tokens=dict(type="int", no_log=False),
        ),
        supports_check_mode=True,
    )
    run_module(module, check_drafter, module.params)


if __name__ == "__main__":
    main()
