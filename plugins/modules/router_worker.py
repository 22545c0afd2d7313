#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: router_worker
short_description: Put a server into a router, or take it out, and wait until the router calls it healthy
version_added: 0.1.0
description:
  - Adds the worker at O(url) to the router at O(router_url) (O(state=present)) and, with O(wait), returns once
    the router lists it as healthy; or removes it (O(state=absent)).
  - Lists the router's workers first, so a router that does not answer fails the task before anything is
    changed, naming O(router_url).
  - A removal that would leave fewer than O(min_healthy) healthy workers in the router is refused before the
    router is asked; the failure names the worker, the healthy workers left and O(min_healthy).
  - "sglang-router 0.3.2: C(POST /workers) with C({url, api_key}), C(GET /workers), C(DELETE /workers/{id}) (the
    id the router gave the worker, looked up by O(url)). Removal is immediate: requests the router already sent to
    the worker finish there, new ones go to the other workers. Version 0.3.2 has no drain state."
  - "Speaks HTTP only; run it on the controller (C(delegate_to: localhost)) or on the router host."
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.ACTIONGROUP_ROUTER
  - gpufleet.serving.router
attributes:
  check_mode:
    support: full
    details:
      - In check mode the router is only read; the result says what would be added or removed (and a removal
        below O(min_healthy) still fails), and nothing is waited for.
  diff_mode:
    support: none
options:
  url:
    description:
      - The worker's URL as the router reaches it, for example V(http://gpu01:30000) (the server's root, no C(/v1)).
      - A trailing slash makes no difference.
    type: str
    required: true
    aliases: [worker_url]
  state:
    description:
      - V(present) adds the worker unless the router lists it already; V(absent) removes it if the router lists it.
    type: str
    choices: [present, absent]
    default: present
  worker_api_key:
    description:
      - The key the router sends to this worker (the server's own C(--api-key)), with O(state=present).
    type: str
  wait:
    description:
      - With O(state=present), wait until the router lists the worker as healthy (it is listed only once the
        router reached the worker's C(/health)).
    type: bool
    default: true
  timeout:
    description:
      - Seconds O(wait) waits. When they run out the task fails naming the worker and what the router says of it
        (its addition job's status); the router keeps trying the worker, so remove it with O(state=absent) if it is
        not to join later.
    type: float
    default: 300
  poll_interval:
    description:
      - Seconds between two listings of the router's workers while O(wait) waits.
    type: float
    default: 0.5
  min_healthy:
    description:
      - With O(state=absent), the fewest healthy workers the router must keep after the removal; the task refuses
        (before changing anything) a removal that would leave fewer. V(0) allows removing the last one.
    type: int
    default: 1
  missing:
    description:
      - With O(state=absent), what a worker the router does not list means. V(ignore) - nothing to remove
        (C(changed=false)). V(fail) - refuse before anything changes, naming the workers the router lists (a rollout
        expects every running server in its router; one missing says the router was restarted without it).
    type: str
    choices: [ignore, fail]
    default: ignore
seealso:
  - module: gpufleet.serving.router_info
  - name: The gpufleet.serving.router role
    description: Runs sglang-router on a router host in front of the fleet.
    link: https://github.com/gpufleet/serving/blob/main/roles/router/README.md
"""

EXAMPLES = r"""
- name: Take this host's server out of the router, keeping two healthy workers
  gpufleet.serving.router_worker:
    router_url: http://router-1:30000
    url: "http://{{ inventory_hostname }}:30000"
    state: absent
    min_healthy: 2
  delegate_to: localhost

- name: Put it back and wait until the router calls it healthy
  gpufleet.serving.router_worker:
    router_url: http://router-1:30000
    url: "http://{{ inventory_hostname }}:30000"
    worker_api_key: "{{ sglang_server_api_key | default(omit) }}"
    api_key: "{{ router_admin_api_key | default(omit) }}"
    timeout: 120
  delegate_to: localhost
  register: joined
"""

RETURN = r"""
workers:
  description: The router's workers after the change (on failure, as last listed).
  returned: always
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
  sample: [{"url": "http://gpu01:30000", "id": "48b657d6-2881-41ce-8441-add0d92c3906", "healthy": true}]
healthy:
  description: How many of RV(workers) are healthy.
  returned: always
  type: int
  sample: 2
worker:
  description: The worker of O(url) (C(url), C(id), C(healthy)); C(id) is empty for a worker the router never listed.
  returned: always
  type: dict
added:
  description: Whether the worker was added (O(state=present)).
  returned: when state is present
  type: bool
removed:
  description: Whether the worker was removed (O(state=absent)).
  returned: when state is absent
  type: bool
elapsed_s:
  description: Seconds the task took, its wait included.
  returned: always
  type: float
  sample: 2.3
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._router.workers import worker_task


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **registry.connection_spec(),
            url=dict(type="str", required=True, aliases=["worker_url"]),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            worker_api_key=dict(type="str", no_log=True),
            wait=dict(type="bool", default=True),
            timeout=dict(type="float", default=300),
            poll_interval=dict(type="float", default=0.5),
            min_healthy=dict(type="int", default=1),
            missing=dict(type="str", default="ignore", choices=["ignore", "fail"]),
        ),
        supports_check_mode=True,
    )
    run_module(module, worker_task, module.params, module.check_mode)


if __name__ == "__main__":
    main()
