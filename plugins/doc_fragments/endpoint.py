# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server options of the endpoint action group's modules (server_wait, llm_benchmark, server_drain).

One wording, because one C(module_defaults) entry for group/gpufleet.serving.endpoint sets them
for all; tests/unit/test_action_groups.py checks that their argument specs agree.
"""

from __future__ import annotations


class ModuleDocFragment:
    # The engine choices between the markers are written by scripts/gen_docs.py from the
    # engine registry; tests/unit/test_generated_docs.py fails when stale.
    DOCUMENTATION = r"""
options:
  base_url:
    description:
      - Root URL of the server, for example V(http://127.0.0.1:30000). A trailing C(/v1) is
        accepted and ignored.
      - The same option in every module of the C(group/gpufleet.serving.endpoint) action group,
        so one C(module_defaults) entry serves them all.
    type: str
    required: true
    aliases: [url]
  api_key:
    description:
      - 'Sent as C(Authorization: Bearer <api_key>) with every request, when set (SGLang and vLLM
        C(--api-key)).'
    type: str
  validate_certs:
    description:
      - Verify the TLS certificate of an C(https) O(base_url).
    type: bool
    default: true
  model:
    description:
      - The model name the module's requests carry (server_wait's one-token generation check,
        llm_benchmark's load; server_drain sends none).
      - Defaults to the first model C(/v1/models) lists.
    type: str
  engine:
    description:
      - Which engine serves at O(base_url) - server_wait reads the server's log lines with its
        rules, llm_benchmark reads its acceptance counters, server_drain its count of requests in
        flight.
      - V(auto) tells it from the server itself - server_wait from the log lines (and the engine's
        model-info path), llm_benchmark from C(/v1/models) C(owned_by), then C(/metrics), then
        C(/server_info), server_drain from C(/v1/models) C(owned_by).
      - The alias O(flavor) is deprecated and will be removed in 2.0.0.
    type: str
    aliases: [flavor]
    # BEGIN GENERATED engine-names-auto (scripts/gen_docs.py)
    choices:
      - auto
      - sglang
      - vllm
    # END GENERATED engine-names-auto
    default: auto
"""
