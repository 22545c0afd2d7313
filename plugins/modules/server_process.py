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
  - A stop can finish the teardown in the same call (one module run on the host, not three) -
    remove the stopped server's files (O(remove), its API key file), then release its GPUs and verify
    them free with NVML as M(gpufleet.serving.gpu_release) does (O(release)).
  - The log file is created with mode 0640 (the previous one kept as C(LOG.1)). A server that prints a
    secret should run behind a filter; with an API key the role starts its C(log_redact.py) as O(argv)
    (C(log_redact.py SECRETS_FILE -- sglang serve ...)), which passes SIGTERM on to the server and
    writes the server's output with the key replaced by C(<redacted>).
author:
  - gpufleet.serving maintainers (@gpufleet)
requirements:
  - psutil
  - nvidia-ml-py (with O(release))
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
  dirs:
    description:
      - With O(state=started), directories to make before anything is written in them (the role gives the
        server's log and state directories when M(gpufleet.serving.server_plan) found them missing or with another
        mode), first thing in the run, whether or not a server is started; in check mode only looked at.
      - Made as M(ansible.builtin.file) with C(state=directory) makes them - a missing
        directory is created with its missing parents, each directory created gets O(dirs[].mode), an existing
        directory gets it when it has another, and a path that exists and is not a directory (or under a file)
        fails the task naming it. RV(dirs_created) and RV(dirs_mode_set) say what changed.
    type: list
    elements: dict
    default: []
    version_added: 0.1.0
    suboptions:
      path:
        description: The directory.
        type: path
        required: true
      mode:
        description: Its mode, an octal string such as V(0750).
        type: raw
        required: true
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
  remove:
    description:
      - With O(state=stopped), files to remove after the stop, whether or not a server was running (the
        role gives the stopped server's API key file). Removed before the O(release), so a release that
        fails leaves none of them behind. A path that does not exist is no error.
    type: list
    elements: path
    default: []
  release:
    description:
      - With O(state=stopped), release the GPUs after the stop and O(remove) and verify them free, as
        M(gpufleet.serving.gpu_release) with these options does (its O(gpufleet.serving.gpu_release#module:sweep),
        O(gpufleet.serving.gpu_release#module:verify) and the rest at their defaults); the result is RV(release).
        A GPU left in use fails the task with gpu_release's message.
      - Each suboption is the gpu_release option of that name.
    type: dict
    suboptions:
      engine:
        description:
          - The engines whose kill set is added to O(release.patterns), as M(gpufleet.serving.gpu_release)'s
            O(gpufleet.serving.gpu_release#module:engine) takes them (an engine's name, or V(any)). An unknown name
            is refused before anything is stopped.
        type: list
        elements: str
      patterns:
        description: Regular expressions of the processes to release.
        type: raw
        required: true
      gpus:
        description: The GPUs to release and verify (V(all), or a list of indices or UUIDs).
        type: raw
        required: true
      sweep_users:
        description: Limit the device sweep to processes of these user names; empty means every user.
        type: list
        elements: str
        required: true
      term_timeout:
        description: Seconds between SIGTERM and SIGKILL.
        type: float
        required: true
      timeout:
        description: Seconds for the whole release until the GPUs are verified free.
        type: float
        required: true
  health:
    description:
      - With O(state=started), judge the GPUs' health as M(gpufleet.serving.gpu_health) does before the start,
        and refuse to start at O(health.fail_on); the result is RV(health). Nothing is judged when the same
        server already runs (no start).
      - The server roles pass it after the release, so a GPU that the last shutdown left unhealthy is caught
        before a new server is put on it.
    type: dict
    suboptions:
      gpus:
        description: The GPUs to judge (V(all), or a list of indices).
        type: raw
        default: all
      fail_on:
        description: Refuse the start at this verdict or worse (V(never) only reports).
        type: str
        choices: [never, fail, warn]
        default: fail
      fail_hint:
        description: A sentence added to the refusal, saying what to change.
        type: str
        default: ''
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

- name: Stop it, remove its API key file, release every GPU and verify them free
  gpufleet.serving.server_process:
    state: stopped
    state_file: /var/lib/gpufleet-serving/sglang-30000.json
    remove: [/var/lib/gpufleet-serving/sglang-30000.secret.yaml]
    release:
      engine: [sglang]
      patterns: []
      gpus: all
      sweep_users: []
      term_timeout: 10
      timeout: 60
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
dirs_created:
  description: The directories O(dirs) made, parents included, outermost first (in check mode, would make).
  returned: with O(state=started) and O(dirs)
  type: list
  elements: str
  sample: [/var/log/sglang]
dirs_mode_set:
  description: The existing O(dirs) given their O(dirs[].mode) (in check mode, would be).
  returned: with O(state=started) and O(dirs)
  type: list
  elements: str
stop:
  description: "How the stop went: C(was_running), C(graceful) (exited after SIGTERM), C(stop_seconds)."
  returned: with O(state=stopped)
  type: dict
stopped:
  description: Whether a running server was stopped (in check mode, would be).
  returned: with O(state=stopped)
  type: bool
removed:
  description: The O(remove) paths that existed and were removed (in check mode, would be).
  returned: with O(state=stopped)
  type: list
  elements: str
health:
  description:
    - M(gpufleet.serving.gpu_health)'s result for O(health) (C(verdict), C(reasons), C(gpus) and the rest); also in the
      result of a refused start.
  returned: with O(state=started) and O(health) when a start was due
  type: dict
release:
  description:
    - M(gpufleet.serving.gpu_release)'s result for O(release) (C(changed), C(killed), C(gpus), C(gpus_selected),
      C(elapsed) and the rest, as that module returns them).
  returned: with O(state=stopped) and O(release)
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
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import COMMON_ARGS
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.health_gate import GATE_OPTIONS, before_start
from ansible_collections.gpufleet.serving.plugins.module_utils._server import stop as _stop
from ansible_collections.gpufleet.serving.plugins.module_utils._server import supervisor as _supervisor

# The release a stop runs: the role's kill set, then the device sweep of the selected GPUs, then
# the NVML check that they hold no memory; the options not in `release` at gpu_release's defaults.
STOP_RELEASE = {"sweep": True, "verify": True, "max_used_mib": 0.0, "force_broad": False, "protect": [],
                "devices": None, "respawn_settle": None, "mps": None, "reset_stuck": False,
                "nvml_timeout": COMMON_ARGS["nvml_timeout"]["default"],
                "v1_reserve_mib": COMMON_ARGS["v1_reserve_mib"]["default"]}


def release_params(release):
    """gpu_release's parameters for the stop's `release` options."""
    return dict(STOP_RELEASE, **release)


def stop_release(release, check_mode):
    """The stop's release, gpu_release's code, checked before the stop (an unknown engine is refused
    then) and run after it. Imported here, by a stop only: Python compiles the module's code on the host
    at every run (Ansible ships it as source), and a start does not need the release's (about 40 ms)."""
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import engine_patterns
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.release import release_gpus

    engine_patterns(release["engine"] or [])
    return lambda: release_gpus(release_params(release), check_mode=check_mode)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["started", "stopped", "status"], default="status"),
            state_file=dict(type="path", required=True),
            argv=dict(type="list", elements="str"),
            env=dict(type="dict", default={}),
            log_path=dict(type="path"),
            fingerprint=dict(type="str"),
            dirs=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                mode=dict(type="raw", required=True),
            )),
            listen_host=dict(type="str"),
            listen_port=dict(type="int"),
            stop_timeout=dict(type="float", default=30.0),
            lock_timeout=dict(type="float", default=120.0),
            remove=dict(type="list", elements="path", default=[]),
            release=dict(type="dict", options=dict(
                engine=dict(type="list", elements="str"),
                patterns=dict(type="raw", required=True),
                gpus=dict(type="raw", required=True),
                sweep_users=dict(type="list", elements="str", required=True),
                term_timeout=dict(type="float", required=True),
                timeout=dict(type="float", required=True),
            )),
            health=dict(type="dict", options=dict(
                gpus=dict(type="raw", default="all"),
                fail_on=dict(GATE_OPTIONS["fail_on"], default="fail"),
                fail_hint=GATE_OPTIONS["fail_hint"],
            )),
        ),
        required_if=[("state", "started", ("argv", "log_path"))],
        required_together=[("listen_host", "listen_port")],
        supports_check_mode=True,
    )
    stopping, release = module.params["state"] == "stopped", module.params["release"]
    health = module.params["health"] if module.params["state"] == "started" else None
    require_libraries(module, "psutil", *(["nvidia-ml-py"] if (stopping and release) or health else []))

    def work():
        run_release = stop_release(release, module.check_mode) if stopping and release else None
        judged = None
        if health and not _supervisor.status(module.params["state_file"])["running"]:
            judged = before_start(health)
        result = _supervisor.supervise(module.params, check_mode=module.check_mode)
        if not stopping:
            return dict(result, health=judged) if judged else result
        return _stop.after_stop(
            result, module.params["remove"], check_mode=module.check_mode, release=run_release)

    run_module(module, work)


if __name__ == "__main__":
    main()
