#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: router_info
short_description: What a router says of its workers, and its metrics
version_added: 0.1.0
description:
  - Lists the workers of the router at O(router_url) (C(GET /workers) on sglang-router 0.3.2) with their id and
    whether the router calls them healthy, and counts the healthy ones.
  - With O(metrics), reads the router's Prometheus page with prometheus_client's parser and returns its
    router-wide figures (sglang-router's C(smg_*) names, summed over their labels) and its per-worker figures by
    worker URL.
  - A router (or metrics page) that does not answer fails the task, naming the URL.
  - "Speaks HTTP only; run it on the controller (C(delegate_to: localhost)) or on the router host."
author:
  - gpufleet.serving maintainers (@gpufleet)
requirements:
  - prometheus_client (with O(metrics); the gpufleet.serving.host_setup role installs it)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.INFO_MODULE
  - gpufleet.serving.attributes.ACTIONGROUP_ROUTER
  - gpufleet.serving.router
options:
  metrics:
    description:
      - Read the router's metrics page too.
    type: bool
    default: true
  metrics_url:
    description:
      - The router's metrics page. sglang-router serves it on a listener of its own (C(--prometheus-host),
        C(--prometheus-port), default port 29000).
      - Defaults to the host of O(router_url) at the router kind's metrics port, path C(/metrics).
    type: str
seealso:
  - module: gpufleet.serving.router_worker
  - name: The gpufleet.serving.router role
    description: Runs sglang-router on a router host in front of the fleet.
    link: https://github.com/gpufleet/serving/blob/main/roles/router/README.md
"""

EXAMPLES = r"""
- name: Ask the router which workers it calls healthy
  gpufleet.serving.router_info:
    router_url: http://router-1:30000
  delegate_to: localhost
  run_once: true
  register: router

- name: Stop when fewer than two workers serve
  ansible.builtin.assert:
    that: router.healthy >= 2
    fail_msg: "the router has {{ router.healthy }} healthy worker(s): {{ router.workers }}"
  run_once: true
"""

RETURN = r"""
workers:
  description: The router's workers.
  returned: success
  type: list
  elements: dict
  contains:
    # BEGIN GENERATED router-worker-fields (scripts/gen_docs.py)
    url:
      description: "The worker's URL as the router keeps it."
      type: str
    id:
      description: "The id the router gave the worker."
      type: str
    healthy:
      description: "Whether the router calls the worker healthy."
      type: bool
    # END GENERATED router-worker-fields
healthy:
  description: How many of RV(workers) are healthy.
  returned: success
  type: int
  sample: 3
total:
  description: How many workers the router lists.
  returned: success
  type: int
  sample: 3
metrics_url:
  description: The metrics page read; null without O(metrics).
  returned: success
  type: str
  sample: http://router-1:29000/metrics
metrics:
  description:
    - Router-wide figures by sample name, summed over their labels (sglang-router - C(smg_worker_pool_size),
      C(smg_http_requests_total), C(smg_router_request_errors_total), C(smg_worker_retries_total),
      C(smg_worker_retries_exhausted_total), C(smg_http_connections_active)); a name the page lacks is left out.
  returned: with metrics
  type: dict
  sample: {"smg_worker_pool_size": 3, "smg_http_requests_total": 1042}
worker_metrics:
  description:
    - Per worker URL, its figures by sample name (sglang-router - C(smg_worker_health) 1 or 0, C(smg_worker_cb_state)
      the circuit breaker's state, C(smg_worker_requests_active) with the cache_aware and manual policies only).
  returned: with metrics
  type: dict
  sample: {"http://gpu01:30000": {"smg_worker_health": 1, "smg_worker_cb_state": 0}}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import require as require_libraries
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._router.workers import info_task


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **registry.connection_spec(),
            metrics=dict(type="bool", default=True),
            metrics_url=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    if module.params["metrics"]:
        require_libraries(module, "prometheus_client")
    run_module(module, info_task, module.params)


if __name__ == "__main__":
    main()
