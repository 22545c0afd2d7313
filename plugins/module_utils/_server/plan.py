# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A server role's plan: compose the launch, read what runs, decide.

One call gives the role everything it needs before it acts: the engine's `serve` command
line (from the engine's option table, _engines/) and what the supervisor starts, the
configuration fingerprint, the paths, the supervisor, what runs now (server_process state
file or systemd unit) with its health, the host's engine version, and the decision (keep,
relaunch or stop). Only reads. No Ansible imports: the module hands in its params and a
command runner.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any, Callable, List, Tuple

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _settings
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import Engine, merge_option
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient
from ansible_collections.gpufleet.serving.plugins.module_utils._server import supervisor as _supervisor
from ansible_collections.gpufleet.serving.plugins.module_utils._server.choice import choose_supervisor
from ansible_collections.gpufleet.serving.plugins.module_utils._server.watch import parse_systemctl_show

# (rc, stdout, stderr) of a command; the module passes module.run_command.
Runner = Callable[[List[str]], Tuple[int, str, str]]

HEALTH_TIMEOUT = 10.0


def entry_point(python: str, requested: str = "", engine: str = "") -> str:
    """REQUESTED, else the engine's console script beside the interpreter (or on PATH for a bare name)."""
    return requested or _registry.get(engine).entry_point(python)


def paths(instance: str, log_dir: str, state_dir: str) -> dict[str, str]:
    return {
        "log": "%s/%s.log" % (log_dir, instance),
        "state_file": "%s/%s.json" % (state_dir, instance),
        # The --config YAML with the API key (mode 0600): the key stays off the command line
        # that every local user can read in /proc.
        "secret_config": "%s/%s.secret.yaml" % (state_dir, instance),
        # With a key, an engine that prints it (Engine.log_redactor) runs under log_redact.py,
        # which copies its output to the log with the key replaced.
        "redactor": "%s/log_redact.py" % state_dir,
        "fingerprint_file": "%s/%s.fingerprint" % (state_dir, instance),
        "unit_file": "/etc/systemd/system/%s.service" % instance,
        "env_file": "/etc/default/%s" % instance,
    }


def _words(option: str, flag: str | None, kind: str, value: Any, secret_config: str) -> list[str]:
    """The command-line words of one option (the kinds: _engines/engine.py FLAG_KINDS); null leaves the
    engine's default."""
    if kind == "args":
        return [str(a) for a in value or []]
    if kind == "switch":
        return [flag] if value else []
    if kind == "secret":
        return [flag, secret_config] if value else []
    if kind == "json":
        return [flag, json.dumps(value, sort_keys=True)] if value else []
    if kind == "text":
        return [flag, value] if value else []
    return [] if value is None else [flag, str(value)]


def speculative(p: dict[str, Any], engine: Engine) -> dict[str, Any]:
    """The option values the speculative settings add (merged with the ones given beside them:
    lists joined, dicts merged with the given keys winning), and the numbers the engine runs."""
    spec = p.get("speculative")
    if not spec:
        return {"options": {}, "numbers": None}
    composed = engine.speculative_options(spec)
    return {"options": {k: merge_option(v, p.get(k)) for k, v in composed.items()},
            "numbers": engine.speculative_numbers(spec)}


def check_speculative_method(p: dict[str, Any], engine: Engine) -> None:
    """Refuse a speculative method the engine does not know, naming the option and the methods it
    knows: the composed `speculative`'s algorithm and the `method` of a user's speculative config.

    The engine would refuse it only at launch, after the running server was torn down. A user's
    config without `method` is refused too, unless `speculative` composes one (the engine would
    guess it from the drafter's directory name). A config of its own (without `speculative`) gets the
    engine's further checks (vLLM: a drafter and a token count)."""
    known = ", ".join(engine.speculative_methods)
    spec = p.get("speculative")
    if spec:
        method = engine.speculative_method(spec["algorithm"])
        if method not in engine.speculative_methods:
            raise InvalidInput("speculative.algorithm %r (%s method %r) is not a speculative method %s knows: "
                               "set it to one of %s" % (spec["algorithm"], engine.title, method, engine.title, known))
    config = p.get(engine.speculative_config_option) if engine.speculative_config_option else None
    if not config:
        return
    if "method" not in config:
        if spec:
            return  # the composed method, checked above, stays
        raise InvalidInput("%s has no method (%s would guess it from the drafter's directory name): set method to "
                           "one of %s" % (engine.speculative_config_option, engine.title, known))
    if config["method"] not in engine.speculative_methods:
        raise InvalidInput("%s.method %r is not a speculative method %s knows: set method to one of %s"
                           % (engine.speculative_config_option, config["method"], engine.title, known))
    if not spec and engine.check_speculative_config:
        engine.check_speculative_config(config)


def server_argv(p: dict[str, Any], engine: Engine, entry: str, secret_config: str,
                options: dict[str, Any] | None = None) -> list[str]:
    """`ENTRY serve MODEL ...` from the engine's option table; OPTIONS override P's values."""
    values = dict(p, **(options or {}))
    head = [entry, "serve"] + ([engine.model_flag] if engine.model_flag else []) + [p["model_path"]]
    return head + [w for option, flag, kind in engine.option_flags
                   for w in _words(option, flag, kind, values.get(option), secret_config)]


def speculative_argv(engine: Engine, options: dict[str, Any]) -> list[str]:
    """The words the speculative options add to the command line."""
    return [w for option, flag, kind in engine.option_flags if option in options
            for w in _words(option, flag, kind, options[option], "")]


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
    engine = _registry.get(p.get("engine"))
    # A server spanning hosts: this node's --nnodes, --node-rank and rank 0's address (_engines/nodes.py).
    p = dict(p, **_settings.derived(engine.name, p))
    entry = entry_point(p["python"], p.get("entry_point") or "", engine.name)
    where = paths(p["instance"], p["log_dir"], p["state_dir"])
    spec = speculative(p, engine)
    argv = server_argv(p, engine, entry, where["secret_config"], spec["options"])
    redact = engine.log_redactor and p.get("api_key")
    launch = ([p["python"], where["redactor"], where["secret_config"], "--"] if redact else []) + argv
    env = server_env(p.get("env"), p.get("gpus"))
    return {"supervisor": supervisor, "entry_point": entry, "argv": argv, "launch_argv": launch,
            "speculative_argv": speculative_argv(engine, spec["options"]), "speculative_numbers": spec["numbers"],
            "env": env, "paths": where, "dirs": dirs(p), "url": base_url(p["host"], p["port"]),
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


def installed_version(python: str, run: Runner, engine: str = "") -> tuple[str, str | None]:
    """(version or 'unknown', the last line of what went wrong or None)."""
    try:
        rc, out, err = run([python, "-c", _registry.get(engine).version_probe()])
    except OSError as exc:
        return "unknown", str(exc)
    if rc == 0 and out.strip():
        return out.strip(), None
    lines = (err or "").strip().splitlines()
    return "unknown", lines[-1] if lines else ""


# The server's directories with their modes: the plan's `dirs`, which server_process makes in the start's own
# run (_server/dirs.py); roles/_server/tasks/launch_files.yml makes them with these modes where a plan has no `dirs`
# or a systemd unit starts the server (tests/unit/roles/test_launch_files.py holds the two equal).
DIR_MODES = (("log_dir", 0o750), ("state_dir", 0o700))


def dirs(p: dict[str, Any]) -> list[dict[str, str]]:
    """The log and state directories with their modes, as server_process's `dirs` option takes them."""
    return [{"path": p[name], "mode": "%04o" % mode} for name, mode in DIR_MODES]


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
    """compose + what runs + health + decision + (before a launch) the entry point, version and directories.

    A speculative method the engine does not know is refused first, before anything is read."""
    if p["state"] != "stopped":
        check_speculative_method(p, _registry.get(p.get("engine")))
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
        engine = _registry.get(p.get("engine"))
        out["engine_version"], out["version_error"] = installed_version(p["python"], run, engine.name)
        # The deprecated sglang_version: the default engine's version under its former name.
        if engine.name == _registry.DEFAULT:
            out["sglang_version"] = out["engine_version"]
    return out


def plan_each(items: list, run: Runner, systemctl: str | None = None,
              service_mgr: Callable[[], str] = lambda: "",
              check_health: Callable[[str], int | None] = health, numbered: bool = False) -> list:
    """plan() of each of ITEMS (the module's params) in order, `changed` false in each; SERVICE_MGR reads the
    host's service manager, once, for the items that name neither supervisor nor service manager.

    One module run for many configurations (the experiment's plan of every variant on a host). With
    NUMBERED (the module's batch), a refusal names the item's position (from 1), in its message and as
    `batch_item`."""
    detected: list = []
    out = []
    for number, item in enumerate(items, 1):
        p = {k: v for k, v in item.items() if k != "batch"}
        if not p.get("supervisor") and not p.get("service_mgr"):
            if not detected:
                detected.append(service_mgr())
            p["service_mgr"] = detected[0]
        try:
            out.append(dict(plan(p, run, systemctl, check_health), changed=False))
        except GpuFleetError as exc:
            if numbered:
                exc.msg = "batch item %d: %s" % (number, exc.msg)
                exc.args = (exc.msg,)
                exc.details["batch_item"] = number
            raise
    return out
