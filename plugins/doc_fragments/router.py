# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The router options of the router action group's modules (router_worker, router_info).

One wording, because one C(module_defaults) entry for group/gpufleet.serving.router sets them
for both; tests/unit/plugins/modules/test_router_info.py checks that both argument specs agree.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  router_url:
    description:
      - Root URL of the router's HTTP API, for example V(http://router-host:30000) (sglang-router's
        C(--host)/C(--port); the C(gpufleet.serving.router) role's C(router_port)).
      - "The modules speak HTTP only, so they run on the controller (C(delegate_to: localhost)) as well
        as on the router host. A router that does not answer fails the task before anything is
        changed, naming this URL."
    type: str
    required: true
  api_key:
    description:
      - 'The router admin key, sent as C(Authorization: Bearer <api_key>) with every admin request.
        sglang-router asks for one only when it was started with C(--control-plane-api-keys
        ID:NAME:admin:KEY) (the router role''s C(router_admin_api_key)); a router that asks for one and
        gets none or a wrong one fails the task with HTTP 401, naming this option.'
    type: str
  validate_certs:
    description:
      - Verify the TLS certificate of an C(https) O(router_url).
    type: bool
    default: true
  router_kind:
    description:
      - Which router answers at O(router_url); its admin API and metric names come from the
        collection's router registry (module_utils/_router).
    type: str
    choices: [sglang-router]
    default: sglang-router
  request_timeout:
    description:
      - Seconds each request to the router may take.
    type: float
    default: 10
"""
