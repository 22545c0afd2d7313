#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: server_plan
short_description: Compose an SGLang or vLLM launch, read what runs, and decide keep, relaunch or stop
version_added: 0.1.0
description:
  - The first step of P(gpufleet.serving.sglang_server#role) (and of P(gpufleet.serving.vllm_server#role)
    with O(engine=vllm)), in one call - it composes the engine's C(serve)
    command line (from the engine's option table, speculative settings included) and what the supervisor
    starts, the environment, the paths and the configuration
    fingerprint; reads what runs now (the state file of M(gpufleet.serving.server_process) or the systemd
    unit with its recorded fingerprint); asks a running server with the same fingerprint for C(/health);
    and decides.
  - The decision is V(keep) when O(state=started) and the same configuration runs and answers 200 on
    C(/health), V(stop) when O(state=stopped), and V(relaunch) otherwise. Before a relaunch it also reads
    the host's engine version (without importing the engine), whether the entry point exists, and whether
    the log and state directories exist with the role's modes.
  - The API key never enters the command line - with a key, the argv carries C(--config SECRET_FILE) and the
    supervisor starts the role's C(log_redact.py) in front of the server; only the key's digest enters the
    fingerprint.
  - Only reads; never changes anything on the host (C(changed) is always false).
  - With O(batch), plans several configurations in one call (one module run on the host instead of one each) and
    returns them as RV(plans).
author:
  - gpufleet.serving maintainers (@gpufleet)
requirements:
  - psutil
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.INFO_MODULE
options:
  engine:
    description:
      - The engine whose launch is composed. V(sglang) (P(gpufleet.serving.sglang_server#role)) composes
        C(sglang serve --model-path ...); V(vllm) (P(gpufleet.serving.vllm_server#role)) composes
        C(vllm serve MODEL --tensor-parallel-size ...) from O(model_path), O(tp_size), O(host), O(port),
        O(served_model_name), O(gpu_memory_utilization), O(max_num_seqs), O(speculative_config), O(api_key)
        and O(extra_args); the SGLang-only options are ignored and no log redactor runs (vLLM masks the key in
        the arguments it logs).
    type: str
    # BEGIN GENERATED engine-names (scripts/gen_docs.py)
    choices:
      - sglang
      - vllm
    # END GENERATED engine-names
    default: sglang
  state:
    description: What the role is asked to do. V(restarted) always relaunches.
    type: str
    choices: [started, stopped, restarted]
    default: started
  model_path:
    description: C(--model-path). Required unless O(state=stopped).
    type: str
    default: ""
  served_model_name:
    description: C(--served-model-name); empty leaves it out.
    type: str
    default: ""
  tp_size:
    description: C(--tp-size), written as given.
    type: raw
    default: 8
  host:
    description: C(--host), the listen address.
    type: str
    default: 127.0.0.1
  port:
    description: C(--port), written as given.
    type: raw
    default: 30000
  mem_fraction_static:
    description: C(--mem-fraction-static), written as given; null leaves it out.
    type: raw
  cuda_graph_max_bs:
    description: C(--cuda-graph-max-bs-decode), written as given; null leaves it out.
    type: raw
  max_running_requests:
    description: C(--max-running-requests), written as given; null leaves it out.
    type: raw
  enable_metrics:
    description: Add C(--enable-metrics).
    type: bool
    default: true
  gpu_memory_utilization:
    description: vLLM's C(--gpu-memory-utilization), written as given; null leaves it out. Only for O(engine=vllm).
    type: raw
  max_num_seqs:
    description: vLLM's C(--max-num-seqs), written as given; null leaves it out. Only for O(engine=vllm).
    type: raw
  speculative_config:
    description:
      - vLLM's C(--speculative-config), written as JSON with sorted keys; for EAGLE-3 the keys C(method)
        (V(eagle3)), C(model) (the drafter) and C(num_speculative_tokens). Empty leaves it out.
        Merged over the config O(speculative) composes. Only for O(engine=vllm).
    type: dict
    default: {}
  api_key:
    description:
      - The server's API key. Adds C(--config SECRET_FILE) to the command line (the role writes the key there)
        and puts the log redactor in front of the server. Never returned.
    type: str
    default: ""
  speculative:
    description:
      - EAGLE-style speculative decoding, composed for the O(engine) - V(sglang) gets C(--speculative-algorithm ALGORITHM
        --speculative-draft-model-path DRAFTER) and, with O(speculative.num_steps), C(--speculative-num-steps
        --speculative-eagle-topk --speculative-num-draft-tokens); V(vllm) gets C(--speculative-config) with C(method)
        (O(speculative.algorithm) lowercased), C(model) and, with O(speculative.num_steps), C(num_speculative_tokens)
        (vLLM drafts a chain - top-k 1 - so O(speculative.eagle_topk) and O(speculative.num_draft_tokens) are not passed).
      - The arguments come before O(speculative_args) (SGLang); O(speculative_config) is merged over the composed
        config, its keys winning (vLLM). RV(speculative_argv) returns what was added.
      - Omit (or null) for no speculative decoding.
    type: dict
    suboptions:
      # BEGIN GENERATED speculative-suboptions (scripts/gen_docs.py)
      algorithm:
        description:
          - 'The speculative algorithm (SGLang''s C(--speculative-algorithm); vLLM''s C(method), lowercased).'
        type: str
        default: "EAGLE3"
      draft_model_path:
        description:
          - 'The drafter''s directory on the host.'
        type: str
        required: true
      num_steps:
        description:
          - 'Draft steps; null leaves the engine''s own choice (with SGLang, of all three numbers).'
        type: int
      eagle_topk:
        description:
          - 'Candidates per step (SGLang only).'
        type: int
      num_draft_tokens:
        description:
          - 'Draft tokens verified per step; with top-k 1 it is O(speculative.num_steps) + 1 (SGLang only).'
        type: int
      # END GENERATED speculative-suboptions
  speculative_args:
    description: Speculative-decoding arguments, after the flags above (and after those O(speculative) composes).
    type: list
    elements: str
    default: []
  nodes:
    description:
      - The inventory hosts of one server that spans hosts, rank 0 first (rank = position); empty or one host for a
        server on this host alone (docs/multinode.md).
      - With two or more, the command line gets this node's share - SGLang C(--nnodes N --node-rank R --dist-init-addr
        ADDR:PORT), vLLM C(--nnodes N --node-rank R --master-addr ADDR --master-port PORT) and C(--headless) on every
        node but rank 0.
    type: list
    elements: str
    default: []
  node:
    description: This host's name in O(nodes) (its rank is its position); required with two or more O(nodes).
    type: str
    default: ""
  dist_addr:
    description: Rank 0's address as the other nodes reach it; required with two or more O(nodes).
    type: str
    default: ""
  dist_port:
    description: The rendezvous port on rank 0; null takes 20000 for SGLang, vLLM's own 29501 for vLLM.
    type: int
  dist_timeout:
    description:
      - SGLang's C(--dist-timeout) or vLLM's C(--distributed-timeout-seconds), seconds torch.distributed's initialisation
        waits for every rank; null leaves it out.
    type: int
  extra_args:
    description: More C(sglang serve) arguments, last.
    type: list
    elements: str
    default: []
  env:
    description: Environment variables for the server.
    type: dict
    default: {}
  gpus:
    description: GPU indices; non-empty sets C(CUDA_VISIBLE_DEVICES).
    type: list
    elements: raw
    default: []
  python:
    description: The interpreter of the SGLang environment (runs the version probe and the log redactor).
    type: str
    default: python3
  entry_point:
    description: The C(sglang) console script; empty means C(sglang) beside O(python), or on PATH for a bare name.
    type: str
    default: ""
  instance:
    description:
      - Instance name; names the log, state, fingerprint, key, unit and environment files. Required unless O(batch)
        or O(settings) is given.
    type: str
  log_dir:
    description: Directory of the server's log.
    type: str
    default: /var/log/sglang
  state_dir:
    description: Directory of the state, fingerprint, key file and log redactor.
    type: str
    default: /var/lib/gpufleet-serving
  supervisor:
    description: V(systemd) or V(process); empty picks V(systemd) where it is the service manager.
    type: str
    choices: ["", systemd, process]
    default: ""
  service_mgr:
    description:
      - The host's service manager when already known (C(ansible_facts.service_mgr)); read on the host
        when empty and O(supervisor) is empty.
    type: str
    default: ""
  settings:
    description:
      - Every setting of the server in one dictionary, keyed as the server spec table names them (the
        P(gpufleet.serving.server_spec#lookup) lookup's dict, or the C(gpufleet.serving.server_plan_options) filter of
        it) - C(engine), C(state) (V(planned) is planned as V(started)) and each setting of that engine, its flag
        included; a setting left out takes the table's default, computed ones included (the port, the instance).
      - Each value is checked by the table (type, choices, the engines it applies to), then by this module's option
        of the same name where it has one (O(speculative)'s keys). Given, it replaces the options above that are
        settings (O(engine) to O(supervisor)); O(service_mgr) still applies. A setting added to the table reaches
        the command line through it with no option of its own here.
    type: dict
  batch:
    description:
      - Plan each item, a dictionary of this module's other options (checked as they are, O(instance) or
        O(settings) required in each), and return the results in order as RV(plans); the options given beside
        O(batch) are then not used.
      - One call for many configurations (the experiment playbook's plan of every variant on a host, before anything
        runs); the host's service manager is read once for all of them.
      - An item the module refuses fails the call, the message naming the item's position (from 1), also returned
        as C(batch_item) with the failure.
    type: list
    elements: dict
notes:
  - The P(gpufleet.serving.sglang_server#role) role passes its C(sglang_server_*) variables here; use the role
    rather than this module in a play.
seealso:
  - module: gpufleet.serving.server_process
  - module: gpufleet.serving.server_wait
  - module: gpufleet.serving.gpu_release
"""

EXAMPLES = r"""
- name: Decide what to do with the SGLang server on port 30000
  gpufleet.serving.server_plan:
    model_path: /models/kimi-k2.5-int4
    tp_size: 8
    port: 30000
    python: /opt/sglang/.venv/bin/python3
    instance: sglang-30000
  register: plan

- name: Show the decision and the command line
  ansible.builtin.debug:
    msg: "{{ plan.decision }}: {{ plan.launch_argv | join(' ') }}"

- name: The same drafter settings for either engine (eagle_drafter's variables, composed per engine)
  gpufleet.serving.server_plan:
    engine: "{{ engine }}"
    model_path: /models/kimi-k2.5-int4
    port: "{{ 8000 if engine == 'vllm' else 30000 }}"
    python: /opt/{{ engine }}/.venv/bin/python3
    instance: "{{ engine }}-eagle"
    speculative:
      algorithm: EAGLE3
      draft_model_path: /models/kimi-k2.5-eagle3
      num_steps: 3
      eagle_topk: 1
      num_draft_tokens: 4
  register: eagle_plan
"""

RETURN = r"""
plans:
  description: With O(batch), each item's result (the return values below), in the order of the items.
  returned: when O(batch) is given
  type: list
  elements: dict
decision:
  description: V(keep), V(relaunch) or V(stop).
  returned: unless O(batch) is given
  type: str
  sample: keep
keep:
  description: Whether the running server is kept (RV(decision) is V(keep)).
  returned: unless O(batch) is given
  type: bool
  sample: true
supervisor:
  description: V(systemd) or V(process).
  returned: unless O(batch) is given
  type: str
  sample: process
entry_point:
  description: The C(sglang) console script the command line starts.
  returned: unless O(batch) is given
  type: str
  sample: /opt/sglang/.venv/bin/sglang
entry_point_exists:
  description: Whether the entry point exists (true for a name looked up on PATH); null unless relaunching.
  returned: unless O(batch) is given
  type: bool
  sample: true
argv:
  description: The C(sglang serve) command line.
  returned: unless O(batch) is given
  type: list
  elements: str
  sample: [/opt/sglang/.venv/bin/sglang, serve, --model-path, /models/kimi, --tp-size, "8", --host, 127.0.0.1,
           --port, "30000", --enable-metrics]
speculative_argv:
  description:
    - The part of RV(argv) that O(speculative) composes, with O(speculative_args) (SGLang) or O(speculative_config) (vLLM)
      merged in; empty without O(speculative).
  returned: unless O(batch) is given
  type: list
  elements: str
  sample: [--speculative-algorithm, EAGLE3, --speculative-draft-model-path, /models/eagle3, --speculative-num-steps, "3",
           --speculative-eagle-topk, "1", --speculative-num-draft-tokens, "4"]
speculative_numbers:
  description:
    - The numbers the engine runs with O(speculative) - C(num_steps), C(eagle_topk), C(num_draft_tokens) (vLLM's chain is
      top-k 1 with steps + 1 draft tokens) - for M(gpufleet.serving.drafter_check); null without O(speculative).
  returned: unless O(batch) is given
  type: dict
  sample: {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
launch_argv:
  description: What the supervisor starts - RV(argv), behind the log redactor when there is an API key.
  returned: unless O(batch) is given
  type: list
  elements: str
  sample: [/opt/sglang/.venv/bin/sglang, serve, --model-path, /models/kimi]
env:
  description: The server's environment (with C(CUDA_VISIBLE_DEVICES) when O(gpus) is set).
  returned: unless O(batch) is given
  type: dict
  sample: {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
url:
  description: The server's base URL.
  returned: unless O(batch) is given
  type: str
  sample: http://127.0.0.1:30000
fingerprint:
  description: SHA-256 of the effective configuration (launch argv, environment, supervisor, the key's digest).
  returned: unless O(batch) is given
  type: str
  sample: 5d0c3e...
paths:
  description: Files on the host.
  returned: unless O(batch) is given
  type: dict
  contains:
    log:
      description: The server's log.
      type: str
      sample: /var/log/sglang/sglang-30000.log
    state_file:
      description: The M(gpufleet.serving.server_process) state file.
      type: str
      sample: /var/lib/gpufleet-serving/sglang-30000.json
    secret_config:
      description: The C(--config) YAML with the API key (mode 0600).
      type: str
      sample: /var/lib/gpufleet-serving/sglang-30000.secret.yaml
    redactor:
      description: Where the role installs C(log_redact.py).
      type: str
      sample: /var/lib/gpufleet-serving/log_redact.py
    fingerprint_file:
      description: The fingerprint recorded beside a systemd unit.
      type: str
      sample: /var/lib/gpufleet-serving/sglang-30000.fingerprint
    unit_file:
      description: The systemd unit.
      type: str
      sample: /etc/systemd/system/sglang-30000.service
    env_file:
      description: The unit's environment file.
      type: str
      sample: /etc/default/sglang-30000
running:
  description: Whether the instance's server (process or unit) runs now.
  returned: unless O(batch) is given
  type: bool
  sample: true
pid:
  description: PID of the running server (the unit's MainPID), or null.
  returned: unless O(batch) is given
  type: int
  sample: 41234
recorded_fingerprint:
  description: The fingerprint recorded with what runs (empty when none).
  returned: unless O(batch) is given
  type: str
health_status:
  description: HTTP status of C(/health) of a running server with the same fingerprint; null when not asked or no answer.
  returned: unless O(batch) is given
  type: int
  sample: 200
engine_version:
  description: The host's version of the O(engine) (sglang or vllm), V(unknown) when it could not be read; null unless relaunching.
  returned: unless O(batch) is given
  type: str
  sample: 0.33.0
sglang_version:
  description:
    - The host's sglang version (RV(engine_version) when O(engine=sglang), else null), V(unknown) when it could not be read;
      null unless relaunching.
    - Deprecated, will be removed in 2.0.0; use RV(engine_version).
  returned: unless O(batch) is given
  type: str
  sample: 0.5.23
dirs_ready:
  description:
    - Whether O(log_dir) (mode 0750) and O(state_dir) (mode 0700) exist with those modes; null unless relaunching.
      The role makes them (RV(dirs)) only when not.
  returned: unless O(batch) is given
  type: bool
  sample: true
dirs:
  description:
    - O(log_dir) and O(state_dir) with their modes (0750 and 0700), as M(gpufleet.serving.server_process)'s
      O(gpufleet.serving.server_process#module:dirs) takes them. The role hands them to the start when RV(dirs_ready) is
      false, and the start makes them.
  returned: unless O(batch) is given
  type: list
  elements: dict
  sample: [{path: /var/log/sglang, mode: "0750"}, {path: /var/lib/gpufleet-serving, mode: "0700"}]
version_error:
  description: The last line of what went wrong reading the version; null when it was read.
  returned: unless O(batch) is given
  type: str
  sample: "ModuleNotFoundError: No module named 'sglang'"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import require as require_libraries
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _settings
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput, run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan as _plan


def _service_mgr(module):
    """The same detection as the setup module's service_mgr fact."""
    from ansible.module_utils.facts.system.service_mgr import ServiceMgrFactCollector
    return ServiceMgrFactCollector().collect(module=module).get("service_mgr") or ""


def argument_spec():
    """The options of one plan (an item of `batch` is checked against the same)."""
    return dict(
        engine=dict(type="str", choices=registry.names(), default=registry.DEFAULT),
        state=dict(type="str", choices=["started", "stopped", "restarted"], default="started"),
        model_path=dict(type="str", default=""),
        served_model_name=dict(type="str", default=""),
        tp_size=dict(type="raw", default=8),
        host=dict(type="str", default="127.0.0.1"),
        port=dict(type="raw", default=registry.get(registry.DEFAULT).default_port),
        mem_fraction_static=dict(type="raw"),
        cuda_graph_max_bs=dict(type="raw"),
        max_running_requests=dict(type="raw"),
        enable_metrics=dict(type="bool", default=True),
        gpu_memory_utilization=dict(type="raw"),
        max_num_seqs=dict(type="raw"),
        speculative_config=dict(type="dict", default={}),
        api_key=dict(type="str", default="", no_log=True),
        speculative=dict(type="dict", options=_settings.speculative_spec()),
        speculative_args=dict(type="list", elements="str", default=[]),
        nodes=dict(type="list", elements="str", default=[]),
        node=dict(type="str", default=""),
        dist_addr=dict(type="str", default=""),
        dist_port=dict(type="int"),
        dist_timeout=dict(type="int"),
        extra_args=dict(type="list", elements="str", default=[]),
        env=dict(type="dict", default={}),
        gpus=dict(type="list", elements="raw", default=[]),
        python=dict(type="str", default="python3"),
        entry_point=dict(type="str", default=""),
        instance=dict(type="str"),
        log_dir=dict(type="str", default="/var/log/" + registry.DEFAULT),
        state_dir=dict(type="str", default="/var/lib/gpufleet-serving"),
        supervisor=dict(type="str", choices=["", "systemd", "process"], default=""),
        service_mgr=dict(type="str", default=""),
    )


# Keys of the server_spec lookup's dict that are the engine's facts, not settings.
SPEC_FACTS = ("title", "vars_prefix", "tested_version", "speculative_on")


def _checked(module, spec, params, where=""):
    """PARAMS checked against SPEC (defaults set), its secrets kept out of the result; InvalidInput naming WHERE."""
    checked = ArgumentSpecValidator(spec, required_one_of=[("instance", "settings")]).validate(params)
    if checked.error_messages:
        raise InvalidInput(where + "; ".join(checked.error_messages))
    module.no_log_values.update(checked._no_log_values)
    return checked.validated_parameters


def _spread(module, spec, params, where=""):
    """PARAMS with its `settings` spread over the options: resolved by the server spec table, then checked by
    the module's option of the same name (a setting without one as it is)."""
    given = params.get("settings")
    if given is None:
        return params
    engine = given.get("engine") or params["engine"]
    state = given.get("state") or params["state"]
    values = _settings.resolve(engine, {k: v for k, v in given.items() if k not in SPEC_FACTS + ("engine", "state")},
                               where=where + "settings.{name}")
    item = dict(values, engine=engine, state="started" if state == "planned" else state,
                service_mgr=params["service_mgr"])
    extended = dict(spec, **{name: dict(type="raw") for name in item if name not in spec})
    return _checked(module, extended, item, where)


def _items(module, spec):
    """Each item of `batch` as the module would take it (checked, defaults set, settings spread)."""
    items = []
    for number, item in enumerate(module.params["batch"], 1):
        where = "batch item %d: " % number
        try:
            items.append(_spread(module, spec, _checked(module, dict(spec, settings=dict(type="dict")), item, where),
                                 where))
        except InvalidInput as exc:
            exc.details["batch_item"] = number
            raise
    return items


def main():
    spec = argument_spec()
    module = AnsibleModule(
        argument_spec=dict(spec, settings=dict(type="dict"), batch=dict(type="list", elements="dict")),
        required_one_of=[("instance", "batch", "settings")],
        supports_check_mode=True,
    )
    require_libraries(module, "psutil")

    def run(argv):
        return module.run_command(argv, handle_exceptions=False)

    def work():
        batch = module.params["batch"] is not None
        if batch:
            items = _items(module, spec)
        else:
            items = [_spread(module, spec, module.params)]
            # The key inside `settings` is a secret too.
            if items[0].get("api_key"):
                module.no_log_values.add(items[0]["api_key"])
        plans = _plan.plan_each(items, run,
                                systemctl=module.get_bin_path("systemctl"), service_mgr=lambda: _service_mgr(module),
                                numbered=batch)
        return dict(plans=plans) if batch else plans[0]

    run_module(module, work)


if __name__ == "__main__":
    main()
