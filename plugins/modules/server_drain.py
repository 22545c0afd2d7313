#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: server_drain
short_description: Wait until an SGLang or vLLM server has no request in flight, by its own count
version_added: 0.2.0
description:
  - Polls the server every O(poll_interval) seconds until its own count of running plus waiting requests is 0, for
    at most O(drain_timeout) seconds. Run it after the server stopped receiving new traffic (taken out of its
    router or load balancer) and before stopping it, so no request is cut.
  - 'The count is the server''s: SGLang''s C(GET /v1/loads) (C(num_running_reqs) + C(num_waiting_reqs) of every
    data-parallel rank; served with or without C(--enable-metrics), behind the API key), vLLM''s C(/metrics)
    gauges C(vllm:num_requests_running) + C(vllm:num_requests_waiting) (summed over engine cores). The endpoint and
    names of each engine are part of its description in the collection''s engine registry.'
  - Fails when the time runs out, saying how many requests are still running and waiting. Neither engine lists the
    requests in flight over HTTP (SGLang names them only in the log lines of its own SIGTERM drain); the failure
    says so.
  - Why a drain before the stop - SGLang 0.5.23 on SIGTERM drains with no deadline but keeps accepting new
    requests, so a supervisor's stop timeout kills whatever is then in flight; vLLM 0.33.0 aborts every request in
    flight unless started with C(--shutdown-timeout).
  - Only reads; never changes anything (C(changed) is always false).
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.ACTIONGROUP_ENDPOINT
  - gpufleet.serving.endpoint
attributes:
  check_mode:
    support: full
    details:
      - In check mode the module reads the count once and reports it (RV(drained) is whether it is 0) without
        waiting and without failing.
  diff_mode:
    support: none
options:
  drain_timeout:
    description:
      - Seconds to wait in all for the count to reach 0. V(0) reads once and fails unless nothing is in flight.
      - Size it from the longest request the server takes (its C(max_tokens) over its slowest single-stream rate).
    type: float
    default: 300
  poll_interval:
    description:
      - Seconds between two reads. The drain ends at most this long (plus one request) after the last request did.
    type: float
    default: 0.1
  request_timeout:
    description:
      - Timeout in seconds of one read. A server that does not answer fails the drain at once, since it can no
        longer say what it has in flight.
    type: float
    default: 5
notes:
  - With O(engine=auto) the engine is told from C(/v1/models) C(owned_by).
  - O(model) is taken so that the endpoint group's defaults reach this module; the drain does not use it.
  - Requires the C(prometheus_client) Python library on the host (vLLM's count is read from its metrics page with
    that library's parser); the C(gpufleet.serving.host_setup) role installs it.
seealso:
  - module: gpufleet.serving.server_process
    description: Stops the server once it is drained.
"""

EXAMPLES = r"""
- name: Wait up to 10 minutes for the server to finish what it has in flight
  gpufleet.serving.server_drain:
    base_url: http://127.0.0.1:30000
    engine: sglang
    api_key: "{{ vault_sglang_api_key }}"
    drain_timeout: 600
  register: drain

- name: Show how long it took
  ansible.builtin.debug:
    msg: "drained in {{ drain.drain_s }} s; in flight over time: {{ drain.series | map(attribute='in_flight') | list }}"

- name: Read the count once, without waiting (check mode)
  gpufleet.serving.server_drain:
    base_url: http://127.0.0.1:8000
    engine: vllm
  check_mode: true
  register: busy
"""

RETURN = r"""
drained:
  description: Whether the server's count of requests in flight reached 0. False only in check mode.
  returned: always
  type: bool
  sample: true
drain_s:
  description: Seconds from the first read until the count was 0 (or until the time ran out).
  returned: always
  type: float
  sample: 1.42
in_flight:
  description: The last count read, running plus waiting.
  returned: always
  type: int
  sample: 0
running:
  description: The last count of running requests.
  returned: always
  type: int
  sample: 0
waiting:
  description: The last count of waiting (queued) requests.
  returned: always
  type: int
  sample: 0
series:
  description:
    - The count over time - the first read, then each change (the latest 40 kept).
  returned: always
  type: list
  elements: dict
  contains:
    t:
      description: Seconds since the first read.
      type: float
      sample: 0.512
    running:
      description: Running requests.
      type: int
    waiting:
      description: Waiting requests.
      type: int
    in_flight:
      description: Their sum.
      type: int
polls:
  description: How many reads the drain made.
  returned: always
  type: int
  sample: 15
engine:
  description: The engine whose count was read.
  returned: always
  type: str
  sample: sglang
url:
  description: The server's root URL.
  returned: always
  type: str
  sample: http://127.0.0.1:30000
source:
  description: The URL the count was read from.
  returned: always
  type: str
  sample: http://127.0.0.1:30000/v1/loads
request_ids:
  description: The ids of the requests in flight; null, because neither engine lists them over HTTP.
  returned: always
  type: list
  elements: str
  sample: null
request_ids_source:
  description: Where the engine names its requests in flight, in words; null where it names them nowhere.
  returned: always
  type: str
  sample: "in its SIGTERM drain's log lines only (\"Remaining requests remaining_rids=[...]\"), not over HTTP"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils import _deps
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server.drain import drain_server


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base_url=dict(type="str", required=True, aliases=["url"]),
            model=dict(type="str"),
            api_key=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
            engine=dict(type="str", default="auto", choices=["auto"] + registry.names(), aliases=["flavor"],
                        deprecated_aliases=[dict(name="flavor", version="2.0.0", collection_name="gpufleet.serving")]),
            drain_timeout=dict(type="float", default=300),
            poll_interval=dict(type="float", default=0.1),
            request_timeout=dict(type="float", default=5),
        ),
        supports_check_mode=True,
    )
    _deps.require(module, "prometheus_client")
    run_module(module, drain_server, module.params, check_mode=module.check_mode)


if __name__ == "__main__":
    main()
