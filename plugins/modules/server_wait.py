#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: server_wait
short_description: Wait until an SGLang or vLLM server is ready, failing at once if it dies
version_added: 0.1.0
description:
  - Polls the server's health URL (HTTP 200 needed) every O(poll_interval) seconds, so readiness is noticed
    within half a second. Connection refused is normal while weights load and CUDA graphs are captured.
  - Optionally sends a one-token completion (O(generate_check)) before it calls the server ready.
  - Watches the server's process (O(pid), O(pidfile) or O(systemd_unit)) and fails as soon as it dies, with the
    last lines of O(log_path) and the recognised cause (out of memory, address in use, warm-up error,
    bad argument, or the exit code).
  - Reads start-up phases from the log (loading weights, KV cache, CUDA graph capture, HTTP server, warm-up, ready)
    and reports them with their times. On timeout it fails with the phase the server was in.
  - Writes progress lines to O(progress_file) while it waits, since a module cannot print while it runs.
  - Only reads; never changes anything on the host (C(changed) is always false).
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
      - In check mode the module probes once and reports (RV(ready), RV(phase), RV(cause)) without waiting and
        without failing, because the task that launches the server did not run in check mode either.
  diff_mode:
    support: none
options:
  health_path:
    description:
      - Path of the health endpoint, appended to O(base_url). Ready means HTTP 200 there.
      - SGLang's C(/health) answers 503 until its warm-up generation has run, then 200.
    type: str
    default: /health
  generate_check:
    description:
      - After the health check passes, also POST C(/v1/completions) with C(max_tokens=1) and require an answer
        with a choice. Catches a server whose health is 200 but whose requests hang.
    type: bool
    default: false
  pid:
    description:
      - PID of the server's main process (for SGLang, the C(sglang serve) or C(sglang.launch_server) process).
      - Its start time is recorded, so a reused PID is not mistaken for the server.
    type: int
  pidfile:
    description:
      - File holding the server's PID. Re-read on every poll; the wait goes on while it is not written yet.
    type: path
  systemd_unit:
    description:
      - systemd unit running the server, watched through C(systemctl show -p MainPID,ActiveState,...).
      - A unit that is C(failed), C(inactive) or in C(auto-restart) counts as dead.
    type: str
  log_path:
    description:
      - The server's log file (stdout and stderr). Read from its start, so the launch should truncate it.
      - Gives the phases, the cause of a crash, and the lines shown on failure.
    type: path
  log_tail_lines:
    description:
      - How many last log lines to show when the server dies or the wait times out.
    type: int
    default: 30
  timeout:
    description:
      - Seconds to wait in all. Loading a large model at TP8 and capturing CUDA graphs can take 20 minutes.
    type: float
    default: 1800
  poll_interval:
    description:
      - Seconds between two probes. Keep at or below V(0.25) to notice readiness within half a second.
    type: float
    default: 0.2
  request_timeout:
    description:
      - Timeout in seconds of one health request. Short, so a hung server cannot stall the process watch.
    type: float
    default: 1.0
  generate_timeout:
    description:
      - Timeout in seconds of the one-token generation of O(generate_check).
    type: float
    default: 60
  progress_interval:
    description:
      - Print a progress line in the play's output every this many seconds (host, URL, seconds waited,
        start-up phase). The module's action plugin runs the wait in slices of this length on the host,
        one task and one result; at O(timeout) it fails naming the phase and the last log lines.
      - Unset, the wait is one module run, silent until it ends. Ignored in check mode and with C(async).
    type: float
    version_added: 0.1.0
  process_identity:
    description:
      - The process the PID must still be, as an earlier watch of the same wait saw it. A process under
        that PID with another start time counts as the server gone (the PID was reused).
      - The action plugin passes the first slice's to every later slice of a wait with O(progress_interval);
        set it yourself only to tie O(pid) to the process a launch started (RV(process.start_time)).
    type: dict
    suboptions:
      pid:
        description: The PID.
        type: int
        required: true
      start_time:
        description: Its start time, clock ticks after boot (field 22 of C(/proc/PID/stat)).
        type: int
        required: true
    version_added: 0.1.0
  progress_file:
    description:
      - File the module rewrites with one line per phase change and a heartbeat every 10 seconds
        (C(HH:MM:SS.mmm elapsed phase=... line)). Follow it with C(tail -f) on the host during a long wait.
    type: path
notes:
  - Linux only for the process watch (it reads C(/proc)).
  - With none of O(pid), O(pidfile) and O(systemd_unit) the module only polls HTTP and cannot fail fast on a crash.
  - To show progress in a play, run the task with C(async) and C(poll=0), then poll it with
    M(ansible.builtin.async_status) while the host's O(progress_file) shows the phase; see EXAMPLES.
    Simpler, set O(progress_interval) and the play prints the phase itself.
seealso:
  - name: SGLang server arguments
    description: Launch flags, health and model info endpoints.
    link: https://docs.sglang.ai/advanced_features/server_arguments.html
"""

EXAMPLES = r"""
- name: Wait for SGLang, watching its PID and log
  gpufleet.serving.server_wait:
    base_url: http://127.0.0.1:30000
    pid: "{{ sglang_launch.pid }}"
    log_path: /var/log/sglang/server.log
    timeout: 1800
  register: sglang_ready

- name: Show how long each phase took
  ansible.builtin.debug:
    msg: "{{ sglang_ready.phases | map(attribute='name') | zip(sglang_ready.phases | map(attribute='at')) | list }}"

- name: Wait for a vLLM systemd unit, with a one-token generation and an API key
  gpufleet.serving.server_wait:
    base_url: https://llm01.example.com:8000
    systemd_unit: vllm.service
    engine: vllm
    generate_check: true
    api_key: "{{ vault_vllm_api_key }}"
    log_path: /var/log/vllm.log

- name: Wait up to 30 minutes, printing the phase every 30 seconds
  gpufleet.serving.server_wait:
    base_url: http://127.0.0.1:30000
    pid: "{{ sglang_launch.pid }}"
    log_path: /var/log/sglang/server.log
    timeout: 1800
    progress_interval: 30

- name: Start the wait in the background so progress can be shown
  gpufleet.serving.server_wait:
    base_url: http://127.0.0.1:30000
    pidfile: /run/sglang.pid
    log_path: /var/log/sglang/server.log
    progress_file: /run/sglang.wait.progress
  async: 2000
  poll: 0
  register: wait_job

- name: Poll the wait (meanwhile run `tail -f /run/sglang.wait.progress` on the host)
  ansible.builtin.async_status:
    jid: "{{ wait_job.ansible_job_id }}"
  register: wait_result
  until: wait_result.finished
  retries: 400
  delay: 5
  failed_when: wait_result.finished and wait_result.failed | default(false)

- name: Report, without waiting, whether the server is ready (check mode)
  gpufleet.serving.server_wait:
    base_url: http://127.0.0.1:30000
    pid: "{{ server_pid }}"
  check_mode: true
  register: now_ready
"""

RETURN = r"""
ready:
  description: Whether the server answered the health check (and the generation, if asked). False only in check mode.
  returned: always
  type: bool
  sample: true
elapsed:
  description: Seconds from the start of the wait until the server was found ready (or until the failure).
  returned: always
  type: float
  sample: 812.4
url:
  description: The server's base URL.
  returned: always
  type: str
  sample: http://127.0.0.1:30000
health_url:
  description: The URL polled for health.
  returned: always
  type: str
  sample: http://127.0.0.1:30000/health
health_status:
  description: HTTP status of the last health request; null when no answer came (connection refused, timeout).
  returned: always
  type: int
  sample: 200
health_error:
  description: Why the last health request did not give 200 (for example C(Connection refused)); null when it did.
  returned: always
  type: str
  sample: null
phase:
  description: The latest start-up phase seen in the log, or null.
  returned: always
  type: str
  sample: ready
phases:
  description:
    - Start-up phases in the order they were first seen in O(log_path). Empty without a log.
    - 'Names: V(init), V(loading_weights), V(weights_loaded), V(kv_cache), V(cuda_graph), V(cuda_graph_done),
      V(engine_ready) (vLLM), V(http_server), V(warmup) (SGLang), V(ready).'
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Phase name.
      type: str
      sample: cuda_graph
    at:
      description: Seconds since the wait began when the module read the line (0 for lines already in the log).
      type: float
      sample: 412.6
    log_offset:
      description: Seconds since the first timestamped log line, from the log's own timestamps; null without one.
      type: float
      sample: 405.0
    line:
      description: The log line that announced the phase.
      type: str
      sample: "[2026-12-03 05:00:03 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1"
engine:
  description: V(sglang), V(vllm), or null when it could not be told.
  returned: always
  type: str
  sample: sglang
flavor:
  description: The same as RV(engine); deprecated, will be removed in 2.0.0.
  returned: always
  type: str
  sample: sglang
model_info:
  description:
    - The JSON of SGLang's C(/model_info) (or C(/get_model_info)), else vLLM's C(/v1/models).
    - Null if none answered.
  returned: when ready
  type: dict
  sample: {"model_path": "moonshotai/Kimi-K2-Instruct", "is_generation": true}
generate:
  description: Result of the one-token generation; null without O(generate_check).
  returned: always
  type: dict
  contains:
    ok:
      description: Whether the completion answered with a choice.
      type: bool
    status:
      description: HTTP status of the completion request.
      type: int
    model:
      description: Model name used.
      type: str
    text:
      description: The generated token.
      type: str
    error:
      description: Why it failed, or null.
      type: str
    latency:
      description: Seconds the completion (and the model lookup) took.
      type: float
process:
  description: The last state of the watched process; null fields when no process is watched.
  returned: always
  type: dict
  contains:
    alive:
      description: True, false, or null when not known (no watch, pidfile not written yet).
      type: bool
    pid:
      description: PID watched (the unit's MainPID for O(systemd_unit)).
      type: int
    exit_code:
      description: Exit code, or minus the signal number, when known (zombie or systemd unit).
      type: int
    detail:
      description: Human-readable state.
      type: str
    start_time:
      description: Start time of the live watched process (clock ticks after boot); null when not known.
      type: int
cause:
  description:
    - Why the server is not ready. V(kind) is one of V(oom), V(ports_held), V(address_in_use), V(bad_argument),
      V(warmup_error), V(engine_failed) (vLLM's engine core failed to start or died), V(exited), V(timeout).
  returned: on failure, and in check mode when the process is dead
  type: dict
  contains:
    kind:
      description: The cause's short name.
      type: str
      sample: oom
    message:
      description: The cause in words.
      type: str
      sample: out of GPU memory
    line:
      description: The first log line that showed it, or null.
      type: str
      sample: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    exit_code:
      description: The process's exit code when known.
      type: int
      sample: 1
log_tail:
  description: The last O(log_tail_lines) lines of the log.
  returned: on failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server.readiness import wait_for_server


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base_url=dict(type="str", required=True, aliases=["url"]),
            health_path=dict(type="str", default="/health"),
            generate_check=dict(type="bool", default=False),
            model=dict(type="str"),
            api_key=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
            engine=dict(type="str", default="auto", choices=["auto"] + registry.names(), aliases=["flavor"],
                        deprecated_aliases=[dict(name="flavor", version="2.0.0", collection_name="gpufleet.serving")]),
            pid=dict(type="int"),
            pidfile=dict(type="path"),
            systemd_unit=dict(type="str"),
            log_path=dict(type="path"),
            log_tail_lines=dict(type="int", default=30),
            timeout=dict(type="float", default=1800),
            poll_interval=dict(type="float", default=0.2),
            request_timeout=dict(type="float", default=1.0),
            generate_timeout=dict(type="float", default=60),
            progress_file=dict(type="path"),
            # Used by the action plugin (plugins/action/server_wait.py), which runs the module in slices.
            progress_interval=dict(type="float"),
            process_identity=dict(type="dict", options=dict(pid=dict(type="int", required=True),
                                                            start_time=dict(type="int", required=True))),
        ),
        mutually_exclusive=[("pid", "pidfile", "systemd_unit")],
        supports_check_mode=True,
    )
    if module.params["systemd_unit"]:
        # Resolve systemctl once, so a host without systemd fails with a clear message.
        module.params["systemctl"] = module.get_bin_path("systemctl", required=True)
    run_module(module, wait_for_server, module.params, check_mode=module.check_mode)


if __name__ == "__main__":
    main()
