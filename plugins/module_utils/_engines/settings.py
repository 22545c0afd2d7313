# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every server setting, once: its name, type, default, the engines it applies to, the flag it
maps to on each engine's command line, and its documentation.

Everything else is read or generated from this table:
- the public roles' variables ENGINE_server_NAME: their argument specs, defaults and README tables
  (scripts/gen_docs.py; tests/unit/test_generated_docs.py fails on drift);
- the settings one server runs with (settings(): the server_spec lookup reads the variables,
  applies the defaults, checks each value and hands the _server role one dict);
- each built-in engine's command line (option_flags(): the Engine's option_flags, in table order);
- the keys of an experiment variant's `server` (plugin_utils/_experiment/schema.py).

A setting's documentation may name {prefix} (the role's variable prefix, e.g. sglang_server_) and
{title} (the engine as people write it); a per-engine text is a dict {engine: text}.

No Ansible imports: the lookup (controller), the modules (host) and scripts read it alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import nodes as _nodes
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# The engines whose servers can span hosts.
MULTINODE = ("sglang", "vllm")

STATES = ("started", "stopped", "restarted", "planned")


class Computed:
    """A default computed by COMPUTE(engine, the other settings). Where it needs the other
    settings, TEMPLATE is how the role's defaults/main.yml writes it ({engine}, {prefix}) and SHOWN
    how the docs show it; otherwise (TEMPLATE None) both show the engine's value."""

    def __init__(self, shown: str, template: str | None, compute: Any) -> None:
        self.shown = shown
        self.template = template
        self.compute = compute

    def __repr__(self):
        return "Computed(%s)" % self.shown


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    type: str                       # str, int, float, bool, list, dict, path
    doc: Any                        # str, list of paragraphs, or {engine: either} (see the module doc)
    default: Any = None             # a value, {engine or "*": value}, or a Computed
    engines: tuple | None = None    # None: every engine
    flags: dict = dataclasses.field(default_factory=dict)  # {engine: (flag or None, kind)}: _engines/engine.py FLAG_KINDS
    elements: str | None = None
    choices: tuple | None = None
    no_log: bool = False
    # Read by gpufleet.serving.server_plan (the rest drive the role's other steps).
    plan: bool = True
    required: bool = False
    # A drafter setting (DRAFTER): the server setting it sets, where the engine has it (None: none).
    server_setting: str | None = None
    # Whether the nodes of one server group may set it differently (_server/group.py compares the
    # others across the group before any host is touched).
    per_node: bool = False
    # A value no one sets: DERIVE(engine, the settings) computes it from the group settings (nodes,
    # node, dist_addr, dist_port) when the command line is composed. Not a role variable.
    derive: Any = None

    def applies_to(self, engine: str) -> bool:
        return self.engines is None or engine in self.engines

    def default_for(self, engine: str) -> Any:
        """The default before computed ones are resolved (a Computed stays one)."""
        if isinstance(self.default, dict) and self.type != "dict":
            return self.default.get(engine, self.default.get("*"))
        return self.default

    def doc_for(self, engine: str, title: str) -> list:
        doc = self.doc.get(engine, self.doc.get("*")) if isinstance(self.doc, dict) else self.doc
        paragraphs = [doc] if isinstance(doc, str) else list(doc)
        prefix = engine + "_server_"
        return [p.replace("{prefix}", prefix).replace("{title}", title).replace("{engine}", engine) for p in paragraphs]


def _instance(engine, values):
    return "%s-%s" % (engine, values["port"])


def _log_dir(engine, values):
    return "/var/log/%s" % engine


def _engine(name):
    # Imported here: the registry imports the engine files, which read this table.
    from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry  # pylint: disable=import-outside-toplevel
    return registry.get(name)


def _default_port(engine, values):
    return _engine(engine).default_port


# SGLang's role kills by patterns (sglang_server_release_patterns, its kill set by default) with an
# empty engine list; every other engine by its name (gpu_release's `engine`) with no patterns.
def _release_engine(engine, values):
    return [] if engine == "sglang" else [engine]


def _release_patterns(engine, values):
    return list(_engine(engine).kill_patterns) if engine == "sglang" else []


# The keys of the neutral `speculative` setting (server_plan's option of that name, an experiment
# variant's `speculative`); each engine file composes them into its own flags (speculative_options).
SPECULATIVE = (
    Setting("algorithm", "str", default="EAGLE3",
            doc="The speculative algorithm (SGLang's C(--speculative-algorithm); vLLM's C(method), lowercased)."),
    Setting("draft_model_path", "str", required=True, doc="The drafter's directory on the host."),
    Setting("num_steps", "int",
            doc="Draft steps; null leaves the engine's own choice (with SGLang, of all three numbers)."),
    Setting("eagle_topk", "int", doc="Candidates per step (SGLang only)."),
    Setting("num_draft_tokens", "int",
            doc="Draft tokens verified per step; with top-k 1 it is O(speculative.num_steps) + 1 (SGLang only)."),
)

# In the order docs show them and, for those with a flag, the order of the command line
# (extra_args always last).
SETTINGS = (
    Setting("state", "str", choices=STATES, default="started", plan=False, doc=(
        "V(started), V(stopped), V(restarted) (teardown and launch even when unchanged) or V(planned) (compose the "
        "command line and read what runs, change nothing; the fact C({prefix}plan) holds it).")),
    Setting("model_path", "str", default="", doc={
        "sglang": "Model directory or hub id (C(--model-path)). Required unless stopping.",
        "vllm": "Model directory or hub id (C(vllm serve)'s positional model). Required unless stopping.",
        "*": "Model directory or hub id. Required unless stopping."}),
    Setting("tp_size", "int", default=8,
            flags={"sglang": ("--tp-size", "value"), "vllm": ("--tensor-parallel-size", "value")}, doc={
                "sglang": "Tensor-parallel size (C(--tp-size)).",
                "vllm": "Tensor-parallel size (C(--tensor-parallel-size)).",
                "*": "Tensor-parallel size."}),
    Setting("host", "str", per_node=True, default="127.0.0.1",
            flags={"sglang": ("--host", "value"), "vllm": ("--host", "value")},
            doc="Listen address. Loopback by default; set a routable address only behind a firewall."),
    Setting("port", "int", default=Computed("", None, _default_port),
            flags={"sglang": ("--port", "value"), "vllm": ("--port", "value")},
            doc={"vllm": "Listen port (vLLM's own default, 8000).", "*": "Listen port."}),
    Setting("served_model_name", "str", default="",
            flags={"sglang": ("--served-model-name", "text"), "vllm": ("--served-model-name", "text")}, doc={
                "vllm": "C(--served-model-name); empty leaves it out (vLLM then serves the model under its path).",
                "*": "C(--served-model-name); empty leaves it out."}),
    Setting("mem_fraction_static", "float", engines=("sglang",),
            flags={"sglang": ("--mem-fraction-static", "value")},
            doc="C(--mem-fraction-static); null leaves SGLang's default."),
    # --cuda-graph-max-bs is split into -decode and -prefill (srt/arg_groups/fields/exec_.py);
    # the old spelling exits 2 with "ambiguous option".
    Setting("cuda_graph_max_bs", "int", engines=("sglang",),
            flags={"sglang": ("--cuda-graph-max-bs-decode", "value")}, doc=(
                "C(--cuda-graph-max-bs-decode) (sglang 0.5.23 split the old C(--cuda-graph-max-bs) into C(-decode) "
                "and C(-prefill); the old spelling exits 2, \"ambiguous option\"); null leaves SGLang's default.")),
    Setting("max_running_requests", "int", engines=("sglang",),
            flags={"sglang": ("--max-running-requests", "value")},
            doc="C(--max-running-requests); null leaves SGLang's default."),
    Setting("enable_metrics", "bool", engines=("sglang",), default=True,
            flags={"sglang": ("--enable-metrics", "switch")},
            doc="C(--enable-metrics) (Prometheus C(/metrics), used for acceptance figures)."),
    Setting("gpu_memory_utilization", "float", engines=("vllm",),
            flags={"vllm": ("--gpu-memory-utilization", "value")},
            doc="C(--gpu-memory-utilization); null leaves vLLM's default (0.9)."),
    Setting("max_num_seqs", "int", engines=("vllm",), flags={"vllm": ("--max-num-seqs", "value")},
            doc="C(--max-num-seqs); null leaves vLLM's default."),
    Setting("speculative_config", "dict", engines=("vllm",), default={},
            flags={"vllm": ("--speculative-config", "json")}, doc=(
                "C(--speculative-config), written as JSON; for EAGLE-3 the keys C(method) (V(eagle3)), C(model) (the "
                "drafter's directory on the host) and C(num_speculative_tokens). Empty leaves it out.",
                "Checked before anything is stopped - C(method) is required (unless O({prefix}speculative) composes "
                "it) and must be one vLLM 0.33.0 knows (C(SpeculativeMethod) in C(vllm/config/speculative.py); the "
                "engine registry's list, which M(gpufleet.serving.server_plan) checks); V(eagle), V(eagle3), "
                "V(draft_model) and V(dflash) need C(model); C(num_speculative_tokens), when given, is at least 1.",
                "With V(eagle3), gpufleet.serving.drafter_check compares the drafter's C(config.json) with the "
                "target's (O({prefix}model_path)) first, and its result is registered as C({prefix}drafter_check) - "
                "a mismatched drafter fails there with the field and both values, before any teardown.")),
    # SGLang reads --config YAML like its flags, and so does vLLM (vllm/utils/argparse_utils.py
    # load_config_file: `api-key: KEY` becomes `--api-key KEY`): the key goes there (mode 0600),
    # not on the command line that every local user can read in /proc.
    Setting("api_key", "str", default="", no_log=True,
            flags={"sglang": ("--config", "secret"), "vllm": ("--config", "secret")}, doc={
                "sglang": (
                    "The server's API key. Written to a C(--config) YAML file of mode 0600 in O({prefix}state_dir) "
                    "(C(INSTANCE.secret.yaml); SGLang reads its flags from it), so it is not on the command line that "
                    "every local user can read in C(/proc). Never logged by the role; only its digest enters the "
                    "fingerprint. The file is removed when the server is stopped.",),
                "*": (
                    "The server's API key (for vLLM it guards C(/v1); C(/health) and C(/metrics) stay open). Written "
                    "to a C(--config) YAML file of mode 0600 in O({prefix}state_dir) (C(INSTANCE.secret.yaml), key "
                    "C(api-key); {title} reads its flags from it), so it is not on the command line that every local "
                    "user can read in C(/proc). Never logged by the role; only its digest enters the fingerprint. The "
                    "file is removed when the server is stopped.",)}),
    # A server that spans hosts (docs/multinode.md): the group settings, then the flags derived from them
    # (_engines/nodes.py), which a server with fewer than two nodes leaves out.
    Setting("nodes", "list", elements="str", engines=MULTINODE, default=[], doc=(
        "The inventory hosts one server spans, rank 0 first (rank = position), e.g. the hosts of an inventory group "
        "(C(groups['kimi_tp16'])); set it alike on every one of them (a group variable). Empty or one host: a "
        "server on this host alone, its command line unchanged.",
        "Rank 0 serves HTTP (the benchmark's target); every other node runs its share of the ranks "
        "({title}'s sizes, O({prefix}tp_size) included, are totals across the nodes). Before any host is touched a "
        "group is refused, naming it and the host, when its nodes disagree on a setting that must match, when a host is "
        "in two groups, when it names a host the play does not reach, or when the sizes do not divide among its "
        "nodes.")),
    Setting("node", "str", engines=MULTINODE, default="", per_node=True, doc=(
        "This host's name in O({prefix}nodes), which gives its rank; the roles pass C(inventory_hostname).")),
    Setting("dist_addr", "str", engines=MULTINODE, default="", doc=(
        "Rank 0's address as the other nodes reach it (the torch rendezvous); empty takes rank 0's C(ansible_host), "
        "else its inventory name.")),
    Setting("dist_port", "int", engines=MULTINODE, default=dict(_nodes.DEFAULT_PORTS), doc={
        "sglang": "The rendezvous port on rank 0 (C(--dist-init-addr ADDR:PORT)); SGLang has no default of its own. "
                  "With attention DP it also takes the next 6 ports.",
        "*": "The rendezvous port on rank 0 (C(--master-port); vLLM's own default, 29501)."}),
    Setting("dist_timeout", "int", engines=MULTINODE,
            flags={"sglang": ("--dist-timeout", "value"), "vllm": ("--distributed-timeout-seconds", "value")}, doc={
                "sglang": "C(--dist-timeout), seconds torch.distributed's initialisation waits for every rank; null "
                          "leaves torch's default.",
                "*": "C(--distributed-timeout-seconds), seconds torch.distributed's initialisation waits for every "
                     "rank; null leaves torch's default."}),
    # sglang/srt/arg_groups/fields/parallel.py: --nnodes, --node-rank, --dist-init-addr (alias --nccl-init-addr).
    # vllm/engine/arg_utils.py add_cli_args: --nnodes/-n, --node-rank/-r, --master-addr, --master-port;
    # --headless (vllm/entrypoints/cli/serve.py) on every node but the head.
    Setting("nnodes", "int", engines=MULTINODE, derive=_nodes.nnodes,
            flags={"sglang": ("--nnodes", "value"), "vllm": ("--nnodes", "value")},
            doc="C(--nnodes): the count of O({prefix}nodes)."),
    Setting("node_rank", "int", engines=MULTINODE, derive=_nodes.rank, per_node=True,
            flags={"sglang": ("--node-rank", "value"), "vllm": ("--node-rank", "value")},
            doc="C(--node-rank): the position of O({prefix}node) in O({prefix}nodes)."),
    Setting("dist_init_addr", "str", engines=("sglang",), derive=_nodes.dist_init_addr,
            flags={"sglang": ("--dist-init-addr", "text")},
            doc="C(--dist-init-addr ADDR:PORT) from O({prefix}dist_addr) and O({prefix}dist_port)."),
    Setting("master_addr", "str", engines=("vllm",), derive=_nodes.address,
            flags={"vllm": ("--master-addr", "text")}, doc="C(--master-addr): O({prefix}dist_addr)."),
    Setting("master_port", "int", engines=("vllm",), derive=_nodes.master_port,
            flags={"vllm": ("--master-port", "value")}, doc="C(--master-port): O({prefix}dist_port)."),
    Setting("headless", "bool", engines=("vllm",), derive=_nodes.headless, per_node=True,
            flags={"vllm": ("--headless", "switch")}, doc="C(--headless) on every node but rank 0."),
    Setting("speculative", "dict", doc={
        "vllm": (
            "EAGLE-style speculative decoding as neutral settings, composed for this engine by "
            "M(gpufleet.serving.server_plan) (its O(gpufleet.serving.server_plan#module:speculative) option - keys "
            "C(algorithm), C(draft_model_path), C(num_steps), C(eagle_topk), C(num_draft_tokens)).",
            "The P(gpufleet.serving.eagle_drafter#role) role sets it. Null (the default) for none. With it, "
            "O({prefix}speculative_config) is merged over the composed config, and the drafter check is the "
            "eagle_drafter role's (this role's checks of the drafter and the token count are skipped; the method, "
            "composed or given, is still checked by M(gpufleet.serving.server_plan) before anything is stopped)."),
        "*": (
            "EAGLE-style speculative decoding as neutral settings, composed for this engine by "
            "M(gpufleet.serving.server_plan) (its O(gpufleet.serving.server_plan#module:speculative) option - keys "
            "C(algorithm), C(draft_model_path), C(num_steps), C(eagle_topk), C(num_draft_tokens)).",
            "The P(gpufleet.serving.eagle_drafter#role) role sets it. Null (the default) for none.")}),
    Setting("speculative_args", "list", elements="str", engines=("sglang",), default=[],
            flags={"sglang": (None, "args")},
            doc="Speculative-decoding arguments; the P(gpufleet.serving.eagle_drafter#role) role sets them. "
                "Leave empty otherwise."),
    Setting("extra_args", "list", elements="str", default=[],
            flags={"sglang": (None, "args"), "vllm": (None, "args")}, doc={
                "vllm": "More C(vllm serve) arguments, one list element each, last on the command line.",
                "*": "More C({engine} serve) arguments, one list element each."}),
    Setting("env", "dict", per_node=True, default={}, doc="Environment variables for the server."),
    Setting("python", "str", per_node=True, default="python3", doc={
        "vllm": "The Python interpreter of the vLLM environment on the host (reads the installed vllm version).",
        "*": "The Python interpreter of the {title} environment on the host."}),
    Setting("entry_point", "str", per_node=True, default="", doc={
        "sglang": (
            "The SGLang entry point, run as C(ENTRY serve ARGS...) (the entry point sglang 0.5.23 recommends).",
            "Empty means C(sglang) in the directory of O({prefix}python) (the environment's console script), or "
            "C(sglang) on C(PATH) when O({prefix}python) is a bare name.",
            "A launch fails early, naming this variable, when that file does not exist (a system Python's pip may "
            "put console scripts in C(/usr/local/bin))."),
        "*": (
            "The {title} console script, run as C(ENTRY serve MODEL ARGS...).",
            "Empty means the engine's console script in the directory of O({prefix}python), or on C(PATH) when "
            "O({prefix}python) is a bare name. A launch fails early, naming this variable, when that file does not "
            "exist.")}),
    Setting("gpus", "list", per_node=True, elements="int", default=[], doc=(
        "GPU indices the server uses (C(CUDA_VISIBLE_DEVICES)); empty means all. Also the GPUs that the teardown "
        "releases and verifies.")),
    Setting("instance", "str", per_node=True,
            default=Computed("{engine}-PORT", "{engine}-{{ {prefix}port }}", _instance), doc={
                "sglang": "Name of the unit, log and state files.",
                "*": "Name of the log, state and key files."}),
    Setting("log_dir", "path", per_node=True, default=Computed("", None, _log_dir),
            doc="Directory of the server log (C(INSTANCE.log))."),
    Setting("state_dir", "path", per_node=True, default="/var/lib/gpufleet-serving", doc={
        "sglang": "Directory of the state file (C(INSTANCE.json), mode 0600), the fingerprint and the API key file.",
        "*": "Directory of the state file (C(INSTANCE.json), mode 0600) and the API key file."}),
    Setting("ready_timeout", "int", per_node=True, default=1800, plan=False, doc={
        "sglang": "Seconds to wait for readiness (weights, KV cache, CUDA graphs, warm-up); long enough for a "
                  "1-trillion-parameter model.",
        "*": "Seconds to wait for readiness (weights, KV cache, CUDA graphs); long enough for a "
             "1-trillion-parameter model."}),
    Setting("progress_interval", "int", per_node=True, default=30, plan=False,
            doc="Seconds between progress lines (phase and elapsed time) while waiting."),
    Setting("supervisor", "str", per_node=True, choices=("", "systemd", "process"), default="", doc={
        "vllm": (
            "V(systemd) or V(process); empty picks systemd where it is the host's service manager "
            "(C(ansible_facts.service_mgr), read by gpufleet.serving.server_plan when facts were not gathered), else "
            "V(process) (gpufleet.serving.server_process, the server in its own session).",
            "V(systemd) writes C(/etc/systemd/system/INSTANCE.service) and its environment file "
            "C(/etc/default/INSTANCE) (both mode 0600; the API key is in neither, only in the C(--config) YAML of "
            "mode 0600), with C(KillMode=mixed) so that a C(VLLM::EngineCore) left by the API server is killed with "
            "the unit."),
        "*": "V(systemd) or V(process); empty picks systemd where it is the host's service manager, else V(process)."}),
    Setting("stop_timeout", "int", per_node=True, default=60, plan=False,
            doc="Seconds for a graceful stop (drain) before SIGKILL."),
    Setting("release_engine", "list", per_node=True, elements="str", default=Computed("", None, _release_engine),
            plan=False, doc=(
                "The engines whose kill set gpufleet.serving.gpu_release applies after the stop (its C(engine)); "
                "V(vllm) kills C(VLLM::) titles, C(vllm.entrypoints) and C(vllm serve) anywhere on the host.",
                "On a host running several servers, set V([]) so that only this server's GPUs are swept.")),
    Setting("release_patterns", "list", per_node=True, elements="str", default=Computed("", None, _release_patterns),
            plan=False, doc={
                "sglang": (
                    "Patterns handed to gpufleet.serving.gpu_release after the stop. Defaults to SGLang's own kill "
                    "set, as the P(gpufleet.serving.engine_patterns#lookup) lookup returns it.",
                    "On a host running several servers, set V([]) so that only this server's GPUs are swept."),
                "*": "More patterns handed to gpufleet.serving.gpu_release after the stop."}),
    Setting("release_sweep_users", "list", per_node=True, elements="str", default=[], plan=False, doc=(
        "gpu_release's C(sweep_users) for the teardown before a launch and on stop. Empty (the default) sweeps every "
        "process that still holds a selected GPU after the pattern kill, as on a host dedicated to serving.",
        "On a host shared with other people's GPU jobs, name the serving user(s) here, so that a launch never kills "
        "another user's job that holds one of the server's GPUs (it then fails the GPU check instead, naming the "
        "holder).")),
    Setting("release_term_timeout", "int", per_node=True, default=10, plan=False, doc="gpu_release's C(term_timeout)."),
    Setting("release_timeout", "int", per_node=True, default=120, plan=False, doc="gpu_release's C(timeout)."),
    Setting("allow_unhealthy_gpus", "bool", per_node=True, default=False, plan=False, doc=(
        "After the release and before the start, the GPUs the server will use are judged as "
        "gpufleet.serving.gpu_health judges them (DCGM's level-1 checks, docs/gpu_health.md); a C(fail) verdict "
        "refuses the start, naming the reasons and this setting.",
        "V(true) starts the server anyway; the verdict and reasons are still in C({prefix}result.health).")),
)


# The settings whose non-empty value turns speculative decoding on, beside `speculative`.
SPECULATIVE_EXTRAS = ("speculative_args", "speculative_config")


def speculative_spec() -> dict:
    """The argument spec of the `speculative` setting's keys (server_plan's suboptions)."""
    out = {}
    for setting in SPECULATIVE:
        spec = {"type": setting.type, "no_log": setting.no_log}
        if setting.required:
            spec["required"] = True
        elif setting.default is not None:
            spec["default"] = setting.default
        out[setting.name] = spec
    return out


def settings_for(engine: str) -> list:
    """The settings ENGINE's server takes, in table order (the derived ones are computed, not taken)."""
    return [s for s in SETTINGS if s.applies_to(engine) and s.derive is None]


def derived(engine: str, values: dict) -> dict:
    """{name: value} of ENGINE's derived settings, computed from VALUES (the group settings among them)."""
    return {s.name: s.derive(engine, values) for s in SETTINGS if s.applies_to(engine) and s.derive is not None}


def find(name: str) -> Setting | None:
    return next((s for s in SETTINGS if s.name == name), None)


def option_flags(engine: str) -> tuple:
    """(setting, flag, kind) of ENGINE's command line, in table order with extra_args last: a
    built-in engine's Engine.option_flags."""
    rows = [(s.name,) + tuple(s.flags[engine]) for s in SETTINGS if engine in s.flags]
    return tuple(sorted(rows, key=lambda row: row[0] == "extra_args"))


def default(setting: Setting, engine: str, values: dict | None = None) -> Any:
    """SETTING's default for ENGINE, computed from VALUES (the other settings) where it needs them."""
    value = setting.default_for(engine)
    if isinstance(value, Computed):
        return value.compute(engine, values or {})
    # A fresh copy: a caller that changes a list or dict default changes no other server's.
    return type(value)(value) if isinstance(value, (list, dict)) else value


def shown_default(setting: Setting, engine: str) -> Any:
    """The default as docs show it (a Computed that needs other settings as its words)."""
    value = setting.default_for(engine)
    if isinstance(value, Computed):
        return value.shown.replace("{engine}", engine) if value.template else value.compute(engine, {})
    return value


def role_default(setting: Setting, engine: str) -> Any:
    """The default as the role's defaults/main.yml writes it (Jinja where it reads another variable)."""
    value = setting.default_for(engine)
    if isinstance(value, Computed) and value.template:
        return value.template.replace("{engine}", engine).replace("{prefix}", engine + "_server_")
    return shown_default(setting, engine)


_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "a string",
          "path": "a path (string)", "list": "a list", "dict": "a mapping"}
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _convert(value: Any, kind: str) -> Any:
    """VALUE as KIND, converting as Ansible's argument specs do (a number given as a string, a
    boolean as yes/no); ValueError when it does not fit."""
    if kind == "int":
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        raise ValueError
    if kind == "float":
        if isinstance(value, bool):
            raise ValueError
        return float(value) if isinstance(value, (int, float, str)) else _fail()
    if kind == "bool":
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError
    if kind in ("str", "path"):
        if isinstance(value, (dict, list, bool)):
            raise ValueError
        return str(value)
    if kind == "list":
        if isinstance(value, (list, tuple)):
            return list(value)
        raise ValueError
    if kind == "dict":
        if isinstance(value, dict):
            return dict(value)
        raise ValueError
    return value


def _fail():
    raise ValueError


def _type_name(value: Any) -> str:
    """The plain type's name (Ansible hands in tagged subclasses of str, int, list...)."""
    return next((t.__name__ for t in (bool, int, float, str, list, dict) if isinstance(value, t)),
                type(value).__name__)


def check_value(setting: Setting, value: Any, where: str) -> Any:
    """VALUE converted to SETTING's type; InvalidInput naming WHERE (the variable) otherwise."""
    try:
        value = _convert(value, setting.type)
    except (ValueError, TypeError):
        raise InvalidInput("%s must be %s, not %s %r" % (where, _WORDS.get(setting.type, setting.type),
                                                         _type_name(value), value))
    if setting.elements:
        out = []
        for i, item in enumerate(value):
            try:
                out.append(_convert(item, setting.elements))
            except (ValueError, TypeError):
                raise InvalidInput("%s item %d must be %s, not %s %r" % (
                    where, i, _WORDS.get(setting.elements, setting.elements), _type_name(item), item))
        value = out
    if setting.choices is not None and value not in setting.choices:
        raise InvalidInput("%s must be one of %s, not %r" % (where, ", ".join(repr(c) for c in setting.choices), value))
    return value


def resolve(engine: str, given: dict, where: str = "{prefix}{name}") -> dict:
    """Every setting of ENGINE's server: GIVEN's value (null or absent: the default), checked and
    converted; the computed defaults from the others. WHERE names a setting in errors."""
    prefix = engine + "_server_"
    unknown = sorted(set(given) - {s.name for s in settings_for(engine)})
    if unknown:
        raise InvalidInput("%s: no such setting for %s; the settings are %s" % (
            ", ".join(where.format(prefix=prefix, name=n) for n in unknown), engine,
            ", ".join(s.name for s in settings_for(engine))))
    values, computed = {}, []
    for setting in settings_for(engine):
        value = given.get(setting.name)
        if value is None:
            if isinstance(setting.default_for(engine), Computed):
                computed.append(setting)
                continue
            value = default(setting, engine)
        if value is not None:
            value = check_value(setting, value, where.format(prefix=prefix, name=setting.name))
        values[setting.name] = value
    for setting in computed:
        values[setting.name] = default(setting, engine, values)
    return values


def given_from(engine: str, variables: dict, template: Any) -> dict:
    """{setting: TEMPLATE(value)} of each ENGINE_server_NAME variable set in VARIABLES (the
    server_spec lookup's reading of a host's variables)."""
    prefix = engine + "_server_"
    return {s.name: template(variables[prefix + s.name]) for s in settings_for(engine) if prefix + s.name in variables}


def server(engine: Any, given: dict, where: str = "{prefix}{name}") -> dict:
    """The one dict a server runs from: resolve()'s settings, the engine's own facts (engine, title,
    vars_prefix, tested_version) and `speculative_on` (any speculative setting given)."""
    values = resolve(engine.name, given, where)
    # An empty speculative mapping is none (an override that turns it off).
    values["speculative"] = values.get("speculative") or None
    values.update({"engine": engine.name, "title": engine.title, "vars_prefix": engine.name + "_server_",
                   "tested_version": engine.tested_version})
    values["speculative_on"] = bool(values.get("speculative")) or any(values.get(k) for k in SPECULATIVE_EXTRAS)
    # A missing model path is the _server role's first check (a caller that enters part of the
    # role with tasks_from may leave it unset).
    return values


def plan_options(server_spec: dict) -> dict:
    """gpufleet.serving.server_plan's options for SERVER_SPEC (server()'s dict): the settings it reads."""
    engine = server_spec["engine"]
    options = {s.name: server_spec[s.name] for s in settings_for(engine) if s.plan and s.name in server_spec}
    options["engine"] = engine
    options["state"] = "started" if server_spec["state"] == "planned" else server_spec["state"]
    return options


# The eagle_drafter role's settings (eagle_drafter_NAME; its engine, eagle_drafter_engine, is the
# engine the server runs on). The five speculative ones become the server's `speculative`; each
# other sets the server setting it names, where the engine has it (null keeps the server's).
DRAFTER = (
    Setting("model_path", "str", required=True, default="", doc=(
        "Drafter directory on the host, with C(config.json) and the weights (C(--speculative-draft-model-path)).")),
    Setting("algorithm", "str", default="EAGLE3", doc=(
        "C(--speculative-algorithm); for vLLM, lowercased, the speculative config's C(method).",
        "M(gpufleet.serving.server_plan) refuses a name the engine does not know, before anything is stopped, naming "
        "the ones it knows (the engine registry's list; SGLang compares it upper-cased).")),
    Setting("num_steps", "int", default=3, doc=(
        "C(--speculative-num-steps); null together with the other two leaves SGLang's defaults (none of the three is "
        "passed). For vLLM, C(num_speculative_tokens) (vLLM's EAGLE drafts a chain, SGLang's top-k 1); null leaves it "
        "out (vLLM then takes the drafter's C(n_predict)).")),
    Setting("eagle_topk", "int", default=1, doc="C(--speculative-eagle-topk) (SGLang only)."),
    Setting("num_draft_tokens", "int", default=4,
            doc="C(--speculative-num-draft-tokens); with top-k 1 it must be steps + 1 (SGLang only)."),
    Setting("mem_fraction_static", "float", server_setting="mem_fraction_static", doc=(
        "Overrides C(sglang_server_mem_fraction_static) with the drafter loaded (lower it on OOM); null keeps the "
        "server's (SGLang only).")),
    Setting("cuda_graph_max_bs", "int", server_setting="cuda_graph_max_bs", doc=(
        "Overrides C(sglang_server_cuda_graph_max_bs) with the drafter loaded; null keeps the server's (SGLang only).")),
    Setting("extra_args", "list", elements="str", default=[], server_setting="speculative_args",
            doc="More speculative arguments, one list element each (SGLang only)."),
    Setting("vllm_config", "dict", default={}, server_setting="speculative_config", doc=(
        "vLLM only: more keys of C(--speculative-config), merged over the composed ones (e.g. "
        "C(draft_tensor_parallel_size=1)).")),
)
DRAFTER_SPECULATIVE = {"model_path": "draft_model_path", "algorithm": "algorithm", "num_steps": "num_steps",
                       "eagle_topk": "eagle_topk", "num_draft_tokens": "num_draft_tokens"}


def drafter_overrides(engine: str, given: dict) -> dict:
    """The server settings a drafter sets on ENGINE's server, from GIVEN (the eagle_drafter_* settings
    without the prefix; left out: the table's default), checked; InvalidInput naming the variable."""
    values = {}
    for setting in DRAFTER:
        value = given.get(setting.name)
        value = default(setting, engine) if value is None else check_value(setting, value, "eagle_drafter_" + setting.name)
        values[setting.name] = value
    if not values["model_path"]:
        raise InvalidInput("eagle_drafter_model_path is required: the drafter's directory on the host")
    out = {"speculative": {key: values[name] for name, key in DRAFTER_SPECULATIVE.items()}}
    for setting in DRAFTER:
        target = find(setting.server_setting) if setting.server_setting else None
        if target is not None and target.applies_to(engine) and values[setting.name] is not None:
            out[target.name] = values[setting.name]
    return out
