#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: router_lock
short_description: One rollout at a time through a router
version_added: 0.1.0
description:
  - With O(state=present), takes a lock named after O(router_url) for the ansible-playbook run that runs the task
    (the outermost Ansible process above the module, by PID and start time), or fails naming the other live run
    that holds it. With O(state=absent), drops it when this run holds it.
  - Two rollouts through one router would each take workers out counting on the others staying in. A lock whose
    run is gone (killed before it released it) is taken over; the result's C(stale) names it.
  - Run it on the controller (C(delegate_to localhost)), where every rollout through the router starts; the swap
    playbooks take it before their first host and drop it before their report.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
options:
  router_url:
    description: The router the lock guards (its trailing slash makes no difference).
    type: str
    required: true
  state:
    description: V(present) takes the lock, V(absent) drops it.
    type: str
    choices: [present, absent]
    default: present
  what:
    description: What the run does, shown to a run that is refused.
    type: str
    default: a rollout
  lock_dir:
    description: The directory of the lock files on the controller.
    type: path
    default: /var/tmp/gpufleet.serving/locks
seealso:
  - module: gpufleet.serving.router_worker
"""

EXAMPLES = r"""
- name: One rollout at a time through the router
  gpufleet.serving.router_lock:
    router_url: http://router-1:30000
    what: swap_to_eagle.yml
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
path:
  description: The lock file.
  returned: success
  type: str
holder:
  description: The run that holds the lock (pid, start, argv, key, what); null after a release of none.
  returned: success
  type: dict
stale:
  description: With O(state=present), the lock of a run that was gone, taken over; null when there was none.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.run_lock import lock_task


def main():
    module = AnsibleModule(
        argument_spec=dict(
            router_url=dict(type="str", required=True),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            what=dict(type="str", default="a rollout"),
            lock_dir=dict(type="path", default="/var/tmp/gpufleet.serving/locks"),
        ),
        supports_check_mode=False,
    )
    run_module(module, lock_task, module.params)


if __name__ == "__main__":
    main()
