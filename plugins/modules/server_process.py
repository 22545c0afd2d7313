#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: server_process
short_description: Run a long-lived server as its own session, without systemd
version_added: 0.1.0
description:
  - Starts a command as the leader of a new session with its output appended to a log file, so it
    outlives the task and can be stopped as a group; records PID, start time, process group and a
    configuration fingerprint in a state file.
  - Stops it like systemd's C(KillMode=mixed) - SIGTERM to the server alone (so it can drain
    requests and end its workers), SIGKILL to it and whatever is left of its process group after
    O(stop_timeout).
  - The supervisor behind P(gpufleet.serving.sglang_server#role) on hosts without systemd.
  - The log file is created with mode 0640 (the previous one kept as C(LOG.1)). A server that prints a
    secret should run behind a filter; with an API key the role starts its C(log_redact.py) as O(argv)
    (C(log_redact.py SECRETS_FILE -- sglang serve ...)), which passes SIGTERM on to the server and
    writes the server's output with the key replaced by C(<redacted>).
author:
  - gpufleet.serving maintainers (@gpufleet)
requirements:
  - psutil
extends_documentation_fragment:
  - gpufleet.serving.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  state:
    description:
      - V(started) launches O(argv) unless the recorded process still runs with the same O(fingerprint).
        A different fingerprint is an error; stop first (the role does, with a GPU release in between).
      - V(stopped) stops the recorded process, if it runs.
      - V(status) only reports.
    type: str
    choices: [started, stopped, status]
    default: status
  state_file:
    description: Where the state (PID, start time, fingerprint) is recorded. Written with mode 0600.
    type: path
    required: true
  argv:
    description: The command, one list element per argument. Required with O(state=started).
    type: list
    elements: str
  env:
    description: Extra environment variables for the command.
    type: dict
    default: {}
  log_path:
    description: Log file (mode 0640), new for each launch; the previous one is kept as C(LOG.1). Required with O(state=started).
    type: path
  fingerprint:
    description: A digest of the effective configuration, recorded with the process.
    type: str
  listen_host:
    description: With O(listen_port), the address the server will listen on; checked free before the launch.
    type: str
  listen_port:
    description: The port the server will listen on; if taken, the task fails naming the process holding it.
    type: int
  stop_timeout:
    description: Seconds to wait after SIGTERM before SIGKILL.
    type: float
    default: 30
  lock_timeout:
    description:
      - A start or a stop holds a lock beside the state file (C(STATE_FILE.lock), C(flock)), so two runs
        against one server (two plays started together, a host listed twice) take turns and a later stop
        finds the server stopped. Seconds to wait for the lock before failing with the holder's PID.
    type: float
    default: 120
    version_added: 0.1.0
"""

EXAMPLES = r"""
- name: Start a server under its own session
  gpufleet.serving.server_process:
    state: started
    argv: [/opt/sglang/bin/sglang, serve, --model-path, /models/kimi, --port, "30000"]
    log_path: /var/log/sglang/sglang-30000.log
    state_file: /var/lib/gpufleet-serving/sglang-30000.json
    listen_host: 127.0.0.1
    listen_port: 30000

- name: Stop it (SIGTERM, drain, then SIGKILL what is left)
  gpufleet.serving.server_process:
    state: stopped
    state_file: /var/lib/gpufleet-serving/sglang-30000.json
    stop_timeout: 60
"""

RETURN = r"""
running:
  description: Whether the recorded process runs after the task.
  returned: always
  type: bool
pid:
  description: PID of the server.
  returned: when known
  type: int
fingerprint:
  description: The fingerprint recorded with the running process.
  returned: when known
  type: str
log_path:
  description: The server's log file.
  returned: when known
  type: str
stop:
  description: "How the stop went: C(was_running), C(graceful) (exited after SIGTERM), C(stop_seconds)."
  returned: with O(state=stopped)
  type: dict
msg:
  description: Says the server was already stopped when a stop found no running server recorded.
  returned: with O(state=stopped) when nothing was running
  type: str
  sample: "already stopped: no running server is recorded in /var/lib/gpufleet-serving/sglang-30000.json"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import require as require_libraries
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server import supervisor as _supervisor


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["started", "stopped", "status"], default="status"),
            state_file=dict(type="path", required=True),
            argv=dict(type="list", elements="str"),
            env=dict(type="dict", default={}),
            log_path=dict(type="path"),
            fingerprint=dict(type="str"),
            listen_host=dict(type="str"),
            listen_port=dict(type="int"),
            stop_timeout=dict(type="float", default=30.0),
            lock_timeout=dict(type="float", default=120.0),
        ),
        required_if=[("state", "started", ("argv", "log_path"))],
        required_together=[("listen_host", "listen_port")],
        supports_check_mode=True,
    )
    require_libraries(module, "psutil")
    run_module(module, _supervisor.supervise, module.params, check_mode=module.check_mode)


if __name__ == "__main__":
    main()
