#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: router_probe
short_description: A steady streaming load through a router for the length of a rollout
version_added: 0.1.0
description:
  - Sends O(clients) streaming completions one after the other each through the router at O(router_url), and
    reads the router's worker list every O(sample_interval) seconds, until O(stop_file) exists; then goes on for
    O(after_s) seconds and returns every request's figures and every sample.
  - Meant to run for a whole rollout with C(async) and C(poll 0) on the controller, collected with
    C(ansible.builtin.async_status) once the rollout touched O(stop_file) (the swap playbooks' C(rollout_probe)).
    The gpufleet.serving.router_probe_report action turns the result into the report.
  - A request is C(ok) when its stream ended with C(data [DONE]), C(broken) when it started streaming and did not
    end so, C(failed) otherwise (an error status, refused, no answer).
  - A router that does not answer fails the task before any load is sent.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.ACTIONGROUP_ROUTER
  - gpufleet.serving.router
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
options:
  stop_file:
    description:
      - The load stops O(after_s) seconds after this file appears (or after O(max_s) seconds). The caller removes
        an old one before starting.
    type: path
    required: true
  ready_file:
    description:
      - Written once O(before_s) seconds have passed, a request has ended and the router has been read, so the
        rollout can wait for it (C(ansible.builtin.wait_for)) and the report has a C(before) phase.
    type: path
  clients:
    description: Concurrent streaming clients, each one request after the other.
    type: int
    default: 8
  input_len:
    description: Prompt tokens of each request (random token ids).
    type: int
    default: 32
  output_len:
    description: Output tokens of each request (C(ignore_eos)).
    type: int
    default: 200
  model:
    description: The model name sent with each request.
    type: str
    default: default
  client_api_key:
    description: The key sent with each request (C(Authorization Bearer)), when the router asks its clients for one.
    type: str
  stream_timeout:
    description: Seconds one request may take.
    type: float
    default: 120
  sample_interval:
    description: Seconds between two readings of the router's workers.
    type: float
    default: 0.5
  before_s:
    description: Seconds of load before O(ready_file) is written.
    type: float
    default: 5
  after_s:
    description: Seconds of load after O(stop_file) appeared.
    type: float
    default: 5
  max_s:
    description: The load stops after this many seconds whether or not O(stop_file) appeared.
    type: float
    default: 3600
seealso:
  - module: gpufleet.serving.router_probe_report
  - module: gpufleet.serving.router_info
"""

EXAMPLES = r"""
- name: Start the load through the router
  gpufleet.serving.router_probe:
    router_url: http://router-1:30000
    stop_file: /tmp/probe.stop
    ready_file: /tmp/probe.ready
  async: 7200
  poll: 0
  register: probe_job
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
router_url:
  description: The router probed.
  returned: success
  type: str
clients:
  description: O(clients).
  returned: success
  type: int
output_len:
  description: O(output_len).
  returned: success
  type: int
stopped_s:
  description: Seconds from the start to the moment O(stop_file) was seen.
  returned: success
  type: float
duration_s:
  description: Seconds the probe ran.
  returned: success
  type: float
requests:
  description:
    - Every request, by start time; times in seconds from the probe's start. C(outcome) is C(ok), C(broken) or
      C(failed); C(ttft) and C(tpot) are null without output.
  returned: success
  type: list
  elements: dict
  sample: [{"start": 0.01, "end": 1.8, "ttft": 0.02, "tpot": 0.009, "tokens": 200, "outcome": "ok",
            "status": 200, "error": null}]
samples:
  description: Every reading of the router, C(healthy) and C(listed) worker URLs (null with C(error) when unread).
  returned: success
  type: list
  elements: dict
  sample: [{"t": 0.5, "healthy": ["http://gpu01:30000"], "listed": ["http://gpu01:30000"], "error": null}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.probe import probe_task
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._router.sampling import sampler


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **registry.connection_spec(),
            stop_file=dict(type="path", required=True),
            ready_file=dict(type="path"),
            clients=dict(type="int", default=8),
            input_len=dict(type="int", default=32),
            output_len=dict(type="int", default=200),
            model=dict(type="str", default="default"),
            client_api_key=dict(type="str", no_log=True),
            stream_timeout=dict(type="float", default=120),
            sample_interval=dict(type="float", default=0.5),
            before_s=dict(type="float", default=5),
            after_s=dict(type="float", default=5),
            max_s=dict(type="float", default=3600),
        ),
        supports_check_mode=False,
    )
    # The load (_bench) and the router's readings (_router) meet here.
    run_module(module, lambda params: probe_task(params, sampler(params)), module.params)


if __name__ == "__main__":
    main()
