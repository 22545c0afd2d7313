#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: server_ranks
short_description: Wait until this node of a server group runs every rank, failing naming the node
version_added: 0.2.0
description:
  - For a server that spans hosts (docs/multinode.md) - on a node of rank 1 or more, waits until the main process the
    supervisor started (O(state_file)) and one rank process per GPU the node runs (SGLang C(sglang::scheduler_*),
    vLLM C(VLLM::Worker*), below the main process) are alive.
  - Never asks the node's own C(/health) - SGLang 0.5.23's ranks of 1 or more answer it from a dummy health server,
    200 whatever their schedulers do, and vLLM's headless nodes serve no HTTP.
  - Fails at once, naming the group, the node and its rank with the last lines of O(log_path), when the main process
    is gone (a node that cannot reach rank 0 exits after the dist timeout with torch's DistNetworkError); fails
    when the ranks are not all up O(dist_timeout) plus 10 seconds after the launch (the node never joined).
  - On rank 0 it waits for nothing (rank 0 is ready when it generates, P(gpufleet.serving.server_wait#module)) and
    only starts the node's watcher (O(watch)).
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode the watcher is not started.
  diff_mode:
    support: none
options:
  engine:
    description: The engine whose rank processes are counted.
    type: str
    required: true
    choices: [sglang, vllm]
  state_file:
    description:
      - The supervisor's state file of the node's server (its main process, as
        P(gpufleet.serving.server_process#module) recorded it).
    type: path
    required: true
  log_path:
    description: The server's log; its last lines come with a failure.
    type: path
  group:
    description: This node's entry of the group plan (the P(gpufleet.serving.server_group#lookup) lookup's dict).
    type: dict
    required: true
  dist_timeout:
    description: The group's dist timeout in seconds; null takes torch's default (600).
    type: int
  elapsed:
    description: Seconds since the node's server was launched, when the wait begins.
    type: float
    default: 0
  poll_interval:
    description: Seconds between two reads of the process table.
    type: float
    default: 0.5
  watch:
    description:
      - Start this node's dead-rank watcher once the node's ranks run (rank 0 at once; docs/multinode.md). While the
        group serves, a rank or main process that dies on any node is seen within about a second and the whole group is
        stopped on every node (SIGTERM, SIGKILL after 1 second); the failure names the node, the rank and the cause
        with the last lines of the node's log, in a file beside O(state_file) (C(*.group-down.json)) that the next
        run returns as RV(last_failure). The members' watchers connect to rank 0's on the dist address at the dist
        port + 17. A watcher that already watches the same server is kept.
    type: bool
    default: true
seealso:
  - module: gpufleet.serving.server_wait
"""

EXAMPLES = r"""
- name: Wait until every rank of this node runs
  gpufleet.serving.server_ranks:
    engine: sglang
    state_file: /var/lib/gpufleet-serving/sglang-30000.json
    log_path: /var/log/gpufleet-serving/sglang-30000.log
    group: "{{ lookup('gpufleet.serving.server_group', 'sglang') }}"
    dist_timeout: 300
"""

RETURN = r"""
node:
  description: This node's inventory name.
  returned: success
  type: str
rank:
  description: This node's rank in the group.
  returned: success
  type: int
ranks:
  description: The rank processes found alive.
  returned: success
  type: int
  sample: 8
pid:
  description: The node's main process.
  returned: success
  type: int
elapsed:
  description: Seconds since the launch when the node was found complete.
  returned: success
  type: float
watcher:
  description: This node's watcher (pid, addr, port, log_path, started - false when one already watched this server).
  returned: success and O(watch)
  type: dict
last_failure:
  description:
    - What brought the group's last run down, as this node's watcher recorded it (group, node, rank, cause, log_lines,
      seen_by, at, stopped); null when its last run ended in an orderly stop, or the server is kept.
  returned: success and O(watch)
  type: dict
message:
  description: One line for the play output.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server.group_ranks import wait_and_watch


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type="str", required=True, choices=registry.names()),
            state_file=dict(type="path", required=True),
            log_path=dict(type="path"),
            group=dict(type="dict", required=True),
            dist_timeout=dict(type="int"),
            elapsed=dict(type="float", default=0),
            poll_interval=dict(type="float", default=0.5),
            watch=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params["group"], **{k: module.params[k] for k in
                                             ("engine", "state_file", "log_path", "dist_timeout", "elapsed",
                                              "poll_interval", "watch")})
    params["watch"] = params["watch"] and not module.check_mode
    run_module(module, wait_and_watch, params)


if __name__ == "__main__":
    main()
