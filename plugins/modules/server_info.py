#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: server_info
short_description: The servers a host runs, as the collection recorded them, and why a server group last went down
version_added: 0.2.0
description:
  - Lists the servers the collection launched on the host - one per state file C(ENGINE-PORT.json) in O(state_dir)
    (the supervisor's record of the server's main process) - with whether each still runs.
  - For a node of a server group (docs/multinode.md), also its dead-rank watcher and the last failure that watcher
    recorded - the node and rank that died, the cause, the last lines of that node's log, when, and whether this
    node's GPUs were verified free after the group was stopped (RV(servers[].last_group_down)).
  - Reads files and the process table only; changes nothing.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.INFO_MODULE
options:
  state_dir:
    description: Where the servers' state files are (the server roles' C(ENGINE_server_state_dir)).
    type: path
    default: /var/lib/gpufleet-serving
  engine:
    description: Only this engine's servers; null lists every engine's.
    type: str
    choices: [sglang, vllm]
  port:
    description: Only the server on this port; null lists every port.
    type: int
seealso:
  - module: gpufleet.serving.server_ranks
"""

EXAMPLES = r"""
- name: Say why the group last went down
  gpufleet.serving.server_info:
    engine: sglang
    port: 30000
  register: servers

- name: Show it
  ansible.builtin.debug:
    msg: "{{ servers.servers | map(attribute='last_group_down') | list }}"
"""

RETURN = r"""
servers:
  description: One entry per recorded server, in the order of their state files' names.
  returned: success
  type: list
  elements: dict
  contains:
    engine:
      description: The server's engine.
      type: str
    port:
      description: The server's port.
      type: int
    state_file:
      description: Its state file.
      type: str
    running:
      description: Whether the recorded main process still runs (the same process, pinned by its start time).
      type: bool
    pid:
      description: The recorded main process.
      type: int
    fingerprint:
      description: The fingerprint of the launch that started it.
      type: str
    log_path:
      description: The server's log.
      type: str
    started_at:
      description: When it was started (seconds since the epoch).
      type: float
    group_watcher:
      description:
        - This node's dead-rank watcher (C(pid), C(running), C(server_pid), C(addr), C(port)); null for a server on one
          host, or a group node whose watcher never started.
      type: dict
    last_group_down:
      description:
        - The last time this server's group went down, as this node's watcher recorded it; null when it never did (an
          orderly stop - teardown or relaunch - records nothing).
      type: dict
      contains:
        group:
          description: The group, as messages name it (C(server group [gpu-a, gpu-b])).
          type: str
        node:
          description: The node whose rank died (C(?) when rank 0 lost a member it never heard from).
          type: str
        rank:
          description: That node's rank in the group.
          type: int
        cause:
          description: What died, for example C(rank process(es) sglang::scheduler_TP9 exited (7 of 8 alive)).
          type: str
        log_lines:
          description: The last lines of that node's server log (on that node; empty on the others).
          type: list
          elements: str
        seen_by:
          description: The node whose watcher wrote this record (this host).
          type: str
        at:
          description: When the watcher saw the failure (seconds since the epoch).
          type: float
        gpus:
          description:
            - This node's GPUs after the watcher stopped its server - C(checked) (false where NVML could not be read,
              C(error) says why), C(free) (every GPU free), C(seconds) (from the stop to the last read), C(at) (when),
              and per GPU C(index), C(uuid), C(free), C(used_mib), C(processes) (the PIDs NVML listed).
            - A GPU is free with no process in NVML and no memory used beyond the driver reserve. Null while the check
              runs, or in a record of a watcher that did not check.
          type: dict
  sample:
    - engine: sglang
      port: 30000
      state_file: /var/lib/gpufleet-serving/sglang-30000.json
      running: false
      pid: 41230
      group_watcher: {pid: 41388, running: false, server_pid: 41230, addr: 10.0.0.1, port: 20017}
      last_group_down:
        group: server group [gpu-a, gpu-b]
        node: gpu-b
        rank: 1
        cause: rank process(es) sglang::scheduler_TP9 exited (7 of 8 alive)
        log_lines: []
        seen_by: gpu-a
        at: 1764960000.5
        gpus: {checked: true, free: true, seconds: 0.21, at: 1764960001.9, error: null,
               gpus: [{index: 0, uuid: GPU-0, free: true, used_mib: 0.0, processes: []}]}
message:
  description: One line for the play output, naming each group's last failure.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server.info import server_info


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state_dir=dict(type="path", default="/var/lib/gpufleet-serving"),
            engine=dict(type="str", choices=registry.names()),
            port=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    run_module(module, server_info, dict(module.params))


if __name__ == "__main__":
    main()
