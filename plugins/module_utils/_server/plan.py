# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_server role's plan: compose the launch, read what runs, decide.

One call gives the role everything it needs before it acts: the `sglang serve` command
line and what the supervisor starts, the configuration fingerprint, the paths, the
supervisor, what runs now (server_process state file or systemd unit) with its health,
the host's sglang version, and the decision (keep, relaunch or stop). Only reads.
No Ansible imports: the module hands in its params and a command runner.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any, Callable, List, Tuple

from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient
from ansible_collections.gpufleet.serving.plugins.module_utils._server import supervisor as _supervisor
from ansible_collections.gpufleet.serving.plugins.module_utils._server.watch import parse_systemctl_show

# (rc, stdout, stderr) of a command; the module passes module.run_command.
Runner = Callable[[List[str]], Tuple[int, str, str]]

# The distribution's version without importing sglang (slow: torch); an install without
# metadata falls back to sglang.__version__.
VERSION_PROBE = """\
import importlib.metadata as m
try:
    print(m.version("sglang"))
except m.PackageNotFoundError:
    import sglang
    print(sglang.__version__)"""

ENGINES = ("sglang", "vllm")

HEALTH_TIMEOUT = 10.0


def entry_point(python: str, requested: str = "", engine: str = "sglang") -> str:
    """`sglang` (or `vllm`: its console script runs `vllm serve`) beside the interpreter (its console script: `sglang serve`, the entry point sglang
    0.5.23 recommends; sglang/launch_server.py warns that `python -m sglang.launch_server` is only
    still supported), or `sglang` on PATH for a bare interpreter name."""
    if requested:
        return requested
    name = "vllm" if engine == "vllm" else "sglang"
    return os.path.dirname(python) + "/" + name if "/" in python else name


def choose_supervisor(requested: str, service_mgr: str | None) -> str:
    if requested:
        return requested
    return "systemd" if service_mgr == "systemd" else "process"


def paths(instance: str, log_dir: str, state_dir: str) -> dict[str, str]:
    return {
        "log": "%s/%s.log" % (log_dir, instance),
        "state_file": "%s/%s.json" % (state_dir, instance),
        # SGLang reads --config YAML like its flags: the API key goes there (mode 0600),
        # not on the command line that every local user can read in /proc.
        "secret_config": "%s/%s.secret.yaml" % (state_dir, instance),
        # With a key, the server runs under log_redact.py, which copies its output to the log
        # with the key replaced: real SGLang prints the key in its server_args= line.
        "redactor": "%s/log_redact.py" % state_dir,
        "fingerprint_file": "%s/%s.fingerprint" % (state_dir, instance),
        "unit_file": "/etc/systemd/system/%s.service" % instance,
        "env_file": "/etc/default/%s" % instance,
    }


def _flag(name: str, value: Any) -> list[str]:
    """--NAME VALUE, or nothing when VALUE is None (null leaves SGLang's default)."""
    return [] if value is None else [name, str(value)]


def _common_flags(p: dict[str, Any], tp_flag: str) -> list[str]:
    """The tensor-parallel size, listen address and served name, spelled alike by both engines but TP."""
    argv = [tp_flag, str(p["tp_size"]), "--host", p["host"], "--port", str(p["port"])]
    if p.get("served_model_name"):
        argv += ["--served-model-name", p["served_model_name"]]
    return argv


def server_argv(p: dict[str, Any], entry: str, secret_config: str) -> list[str]:
    argv = [entry, "serve", "--model-path", p["model_path"]] + _common_flags(p, "--tp-size")
    argv += _flag("--mem-fraction-static", p.get("mem_fraction_static"))
    argv += _flag("--cuda-graph-max-bs-decode", p.get("cuda_graph_max_bs"))
    argv += _flag("--max-running-requests", p.get("max_running_requests"))
    if p.get("enable_metrics"):
        argv.append("--enable-metrics")
    if p.get("api_key"):
        argv += ["--config", secret_config]
    return argv + [str(a) for a in p.get("speculative_args") or []] + [str(a) for a in p.get("extra_args") or []]


def vllm_argv(p: dict[str, Any], entry: str, secret_config: str) -> list[str]:
    """`vllm serve MODEL ...` (vLLM 0.33.0, vllm/entrypoints/cli/serve.py: the model is positional).

    The API key goes into the --config YAML (vllm/utils/argparse_utils.py load_config_file: keys
    are flag names, `api-key: KEY` becomes `--api-key KEY`), never on the command line; vLLM
    masks api_key in the arguments it logs (vllm/entrypoints/common/startup.py
    _SENSITIVE_ARG_FIELDS), so no log redactor runs in front of it."""
    argv = [entry, "serve", p["model_path"]] + _common_flags(p, "--tensor-parallel-size")
    argv += _flag("--gpu-memory-utilization", p.get("gpu_memory_utilization"))
    argv += _flag("--max-num-seqs", p.get("max_num_seqs"))
    if p.get("speculative_config"):
        argv += ["--speculative-config", json.dumps(p["speculative_config"], sort_keys=True)]
    if p.get("api_key"):
        argv += ["--config", secret_config]
    return argv + [str(a) for a in p.get("extra_args") or []]


def server_env(env: dict[str, Any] | None, gpus: list[Any] | None) -> dict[str, Any]:
    out = dict(env or {})
    if gpus:
        out["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    return out


def fingerprint(launch_argv: list[str], env: dict[str, Any], supervisor: str, api_key: str) -> str:
    """A digest of the effective configuration; only the key's digest enters it.

    The same JSON (key order, separators) as the role's former
    `{'argv', 'env', 'supervisor', 'key'} | to_json | hash('sha256')`, so a server launched
    by an earlier release with the same configuration is kept."""
    doc = {"argv": launch_argv, "env": env, "supervisor": supervisor,
           "key": hashlib.sha256((api_key or "").encode("utf-8")).hexdigest()}
    return hashlib.sha256(json.dumps(doc).encode("utf-8")).hexdigest()


def base_url(host: str, port: Any) -> str:
    return "http://%s:%s" % ("[%s]" % host if ":" in host else host, port)


def compose(p: dict[str, Any]) -> dict[str, Any]:
    """Everything the launch needs, from the role's variables; no I/O."""
    supervisor = choose_supervisor(p.get("supervisor") or "", p.get("service_mgr"))
    engine = p.get("engine") or "sglang"
    entry = entry_point(p["python"], p.get("entry_point") or "", engine)
    where = paths(p["instance"], p["log_dir"], p["state_dir"])
    if engine == "vllm":
        argv = vllm_argv(p, entry, where["secret_config"])
        launch = list(argv)
    else:
        argv = server_argv(p, entry, where["secret_config"])
        launch = ([p["python"], where["redactor"], where["secret_config"], "--"] if p.get("api_key") else []) + argv
    env = server_env(p.get("env"), p.get("gpus"))
    return {"supervisor": supervisor, "entry_point": entry, "argv": argv, "launch_argv": launch,
            "env": env, "paths": where, "url": base_url(p["host"], p["port"]),
            "fingerprint": fingerprint(launch, env, supervisor, p.get("api_key") or "")}


def unit_state(instance: str, fingerprint_file: str, run: Runner, systemctl: str | None) -> dict[str, Any]:
    """The unit's state through `systemctl show`; inactive when systemctl is missing or fails."""
    values = {}
    if systemctl:
        rc, out, unused = run([systemctl, "show", "%s.service" % instance,
                               "--property=ActiveState", "--property=MainPID"])
        values = parse_systemctl_show(out) if rc == 0 else {}
    try:
        with open(fingerprint_file) as handle:
            recorded = handle.read().strip()
    except OSError:
        recorded = ""
    pid = values.get("MainPID") or "0"
    return {"running": values.get("ActiveState") == "active", "pid": int(pid) if pid.isdigit() else 0,
            "fingerprint": recorded}


def process_state(state_file: str) -> dict[str, Any]:
    now = _supervisor.status(state_file)
    return {"running": now["running"], "pid": now.get("pid"), "fingerprint": now.get("fingerprint") or ""}


def health(url: str, timeout: float = HEALTH_TIMEOUT) -> int | None:
    """HTTP status of GET URL/health (no key: /health needs none), None without an answer."""
    return HttpClient(url, user_agent="gpufleet.serving.server_plan").get("/health", timeout).status


def decide(state: str, running: bool, recorded: str, wanted: str, health_status: int | None) -> str:
    """keep (started, running, same configuration, healthy), relaunch, or stop."""
    if state == "stopped":
        return "stop"
    if state == "started" and running and recorded == wanted and health_status == 200:
        return "keep"
    return "relaunch"


def installed_version(python: str, run: Runner, engine: str = "sglang") -> tuple[str, str | None]:
    """(version or 'unknown', the last line of what went wrong or None)."""
    probe = VERSION_PROBE.replace("sglang", engine) if engine in ENGINES else VERSION_PROBE
    try:
        rc, out, err = run([python, "-c", probe])
    except OSError as exc:
        return "unknown", str(exc)
    if rc == 0 and out.strip():
        return out.strip(), None
    lines = (err or "").strip().splitlines()
    return "unknown", lines[-1] if lines else ""


# The directories the role creates before a launch, with their modes (roles/sglang_server/tasks/launch.yml).
DIR_MODES = (("log_dir", 0o750), ("state_dir", 0o700))


def dirs_ready(p: dict[str, Any]) -> bool:
    """Whether the log and state directories exist with the role's modes (its file tasks would change nothing)."""
    for name, mode in DIR_MODES:
        try:
            info = os.stat(p[name])
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) != mode:
            return False
    return True


def plan(p: dict[str, Any], run: Runner, systemctl: str | None = None,
         check_health: Callable[[str], int | None] = health) -> dict[str, Any]:
    """compose + what runs + health + decision + (before a launch) the entry point, version and directories."""
    out = compose(p)
    where = out["paths"]
    if out["supervisor"] == "systemd":
        now = unit_state(p["instance"], where["fingerprint_file"], run, systemctl)
    else:
        now = process_state(where["state_file"])
    same = now["running"] and now["fingerprint"] == out["fingerprint"]
    status = check_health(out["url"]) if same and p["state"] != "stopped" else None
    decision = decide(p["state"], now["running"], now["fingerprint"], out["fingerprint"], status)
    out.update(running=now["running"], pid=now["pid"] or None, recorded_fingerprint=now["fingerprint"],
               health_status=status, decision=decision, keep=decision == "keep",
               entry_point_exists=None, sglang_version=None, engine_version=None, version_error=None,
               dirs_ready=None)
    if decision == "relaunch":
        out["dirs_ready"] = dirs_ready(p)
        out["entry_point_exists"] = os.path.exists(out["entry_point"]) if "/" in out["entry_point"] else True
        engine = p.get("engine") or "sglang"
        out["engine_version"], out["version_error"] = installed_version(p["python"], run, engine)
        if engine == "sglang":
            out["sglang_version"] = out["engine_version"]
    return out
