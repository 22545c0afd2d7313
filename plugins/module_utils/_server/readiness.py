# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait until an inference server answers, failing at once if its process dies.

One loop, every `poll_interval` seconds: read new log lines (phases, causes),
check the process, ask the health URL. Connection refused is normal for minutes
while weights load and CUDA graphs are captured; only a dead process or the
timeout ends the wait early. No Ansible imports: the module hands in its params.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient, server_root
from ansible_collections.gpufleet.serving.plugins.module_utils._server.log import LogFollower, LogState, diagnose
from ansible_collections.gpufleet.serving.plugins.module_utils._server.watch import make_watch

HEARTBEAT_S = 10.0  # a progress line at least this often, so `tail -f` shows life


class WaitFailed(GpuFleetError):
    """The server died or was not ready in time; `result` is the wait's result so far."""


class WaitProgress:
    """Human-readable progress lines for `tail -f` while the module runs."""

    def __init__(self, path: str | None, secrets: list | tuple = (), clock: Any = time.time) -> None:
        self.path = path
        self.secrets = [s for s in secrets if s]
        self.clock = clock
        self.last_write = None
        if path:
            open(path, "w").close()  # one wait per file: start empty

    def write(self, at: float, text: str) -> None:
        if not self.path:
            return
        for secret in self.secrets:
            text = text.replace(secret, "********")
        now = self.clock()
        stamp = "%s.%03d" % (time.strftime("%H:%M:%S", time.localtime(now)), int(now * 1000) % 1000)
        with open(self.path, "a") as handle:
            handle.write("%s %8.1fs %s\n" % (stamp, at, text))
        self.last_write = at

    def heartbeat(self, at: float, text: str) -> None:
        if self.path and (self.last_write is None or at - self.last_write >= HEARTBEAT_S):
            self.write(at, text)


class Waiter:
    def __init__(self, params: dict, client: HttpClient | None = None, watch: Any = None, clock: Any = time.monotonic, sleep: Any = time.sleep) -> None:
        self.p = params
        self.clock = clock
        self.sleep = sleep
        self.client = client or HttpClient(server_root(params["base_url"]), params.get("api_key"),
                                           params.get("validate_certs", True))
        self.watch = watch or make_watch(params.get("pid"), params.get("pidfile"), params.get("systemd_unit"),
                                         params.get("systemctl") or "systemctl", params.get("process_identity"))
        engine = params.get("engine") or "auto"
        self.log = LogState(None if engine == "auto" else engine, params.get("log_tail_lines", 30))
        self.follower = LogFollower(params["log_path"]) if params.get("log_path") else None
        self.progress = WaitProgress(params.get("progress_file"), secrets=[params.get("api_key")])
        self.start = None
        self.health = None
        self.proc = None
        self.generate = None

    # --- one step each -------------------------------------------------
    def elapsed(self) -> float:
        return self.clock() - self.start

    def read_log(self, final: bool = False) -> None:
        if not self.follower:
            return
        at = self.elapsed()
        for raw in self.follower.read_lines(final=final):
            entry = self.log.feed(raw, at)
            if entry:
                self.progress.write(at, "phase=%s  %s" % (entry["name"], entry["line"]))

    def check_health(self) -> bool:
        self.health = self.client.get(self.p.get("health_path", "/health"), self.p.get("request_timeout", 1.0))
        return self.health.status == 200

    def model_name(self) -> Any:
        if self.p.get("model"):
            return self.p["model"]
        answer = self.client.get("/v1/models", self.p.get("request_timeout", 1.0))
        data = (answer.json() or {}).get("data") if answer.status == 200 else None
        if data and isinstance(data, list) and isinstance(data[0], dict):
            return data[0].get("id")
        return None

    def check_generate(self) -> Any:
        """One-token completion; True when it answered with a choice."""
        began = self.clock()
        model = self.model_name()
        payload = {"prompt": "Hello", "max_tokens": 1, "temperature": 0}
        if model:
            payload["model"] = model
        answer = self.client.post_json("/v1/completions", payload, self.p.get("generate_timeout", 60.0))
        body = answer.json() if answer.status == 200 else None
        ok = bool(isinstance(body, dict) and body.get("choices"))
        text = body["choices"][0].get("text") if ok and isinstance(body["choices"][0], dict) else None
        self.generate = {"ok": ok, "status": answer.status, "model": model, "text": text,
                         "error": None if ok else (answer.error or "no choices in the answer"),
                         "latency": round(self.clock() - began, 3)}
        return ok

    def model_info(self) -> dict | None:
        """The engine's own model-info paths (Engine.model_info_paths; every engine's while the
        engine is not known, and the one that answers names it), else /v1/models."""
        timeout = max(self.p.get("request_timeout", 1.0), 5.0)
        known = _registry.find(self.log.engine)
        for engine in (known,) if known else _registry.engines():
            for path in engine.model_info_paths:
                answer = self.client.get(path, timeout)
                if answer.status == 200 and answer.json() is not None:
                    self.log.engine = self.log.engine or engine.name
                    return answer.json()
        answer = self.client.get("/v1/models", timeout)
        return answer.json() if answer.status == 200 else None

    # --- results -------------------------------------------------------
    def result(self, **extra: Any) -> dict:
        health = self.health
        out = {
            "changed": False,
            "url": self.client.base_url,
            "health_url": self.client.url(self.p.get("health_path", "/health")),
            "health_status": health.status if health else None,
            "health_error": health.error if health and health.status != 200 else None,
            "elapsed": round(self.elapsed(), 3),
            "phase": self.log.phase,
            "phases": list(self.log.phases),
            "engine": self.log.engine,
            # The same under its old name, a deprecated return key (server_wait RETURN says so).
            "flavor": self.log.engine,
            "process": self.proc.as_dict() if self.proc else None,
            "generate": self.generate,
        }
        out.update(extra)
        return out

    def died(self) -> tuple:
        self.read_log(final=True)  # the last lines a dying server wrote name the cause
        cause = diagnose(self.log.causes, self.proc.exit_code)
        tail = list(self.log.tail)
        msg = "Server process %s died after %.1f s (phase: %s): %s" % (
            self.proc.pid if self.proc.pid is not None else "?", self.elapsed(),
            self.log.phase or "unknown", cause["message"])
        if cause["line"]:
            msg += " -- " + cause["line"]
        if tail:
            msg += "\nLast log lines:\n" + "\n".join(tail)
        self.progress.write(self.elapsed(), "FAILED: " + cause["message"])
        return msg, self.result(ready=False, cause=cause, log_tail=tail)

    def timed_out(self) -> tuple:
        phase = self.log.phase
        since = ""
        if phase:
            seen = [p for p in self.log.phases if p["name"] == phase][0]["at"]
            since = " since %.1f s" % seen
        health = self.health
        why = "HTTP %s" % health.status if health and health.status else (health.error if health else "no answer")
        if self.generate and not self.generate["ok"]:
            why += "; one-token generation failed: %s" % self.generate["error"]
        msg = "Server at %s not ready after %.1f s (timeout %s s); phase: %s%s; last health: %s" % (
            self.client.base_url, self.elapsed(), self.p.get("timeout"), phase or "unknown", since, why)
        self.progress.write(self.elapsed(), "TIMEOUT in phase=%s" % phase)
        return msg, self.result(ready=False, cause={"kind": "timeout", "message": msg, "line": None,
                                                    "exit_code": None},
                                log_tail=list(self.log.tail))

    # --- the loop --------------------------------------------------------
    def readiness_check(self) -> bool:
        """Health (and generation): runs in a probe thread. True when ready."""
        if not self.check_health():
            return False
        return self.check_generate() if self.p.get("generate_check") else True

    def watch_process(self) -> None:
        """Read the log and check the process; raise WaitFailed when it died."""
        self.read_log()
        self.proc = self.watch.poll()
        if self.proc.alive is False:
            msg, result = self.died()
            raise WaitFailed(msg, result)

    def ready(self) -> dict:
        elapsed = round(self.elapsed(), 3)
        self.read_log(final=True)
        self.progress.write(elapsed, "READY (health %s)" % self.health.status)
        return self.result(ready=True, elapsed=elapsed, model_info=self.model_info())

    def run(self, check_mode: bool = False) -> dict:
        self.start = self.clock()
        self.progress.write(0.0, "waiting for %s" % self.client.url(self.p.get("health_path", "/health")))
        if check_mode:
            return self.report()
        interval = self.p.get("poll_interval", 0.2)
        deadline = self.start + self.p.get("timeout", 1800)
        probe = _ProbeThread(self.readiness_check)
        while True:
            began = self.clock()
            self.watch_process()
            if self.clock() >= deadline:
                msg, result = self.timed_out()
                raise WaitFailed(msg, result)
            # Wait for the probe at most until the next round: a hung request
            # must not hold up the process watch.
            if probe.wait(max(0.0, interval - (self.clock() - began))):
                if probe.take():
                    return self.ready()
                health = self.health.status or self.health.error
                self.progress.heartbeat(self.elapsed(), "phase=%s health=%s" % (self.log.phase, health))
            self.sleep(max(0.0, min(interval - (self.clock() - began), deadline - self.clock())))

    def report(self) -> dict:
        """Check mode: one probe, no waiting, no failing (the launch did not run either)."""
        try:
            self.watch_process()
        except WaitFailed as exc:
            return exc.result
        if self.readiness_check():
            return self.ready()
        return self.result(ready=False, model_info=None)


class _ProbeThread:
    """Runs one readiness check at a time in a daemon thread (a hung one never blocks exit)."""

    def __init__(self, check):
        self.check = check
        self.thread = None
        self.outcome = None

    def _run(self):
        self.outcome = self.check()

    def wait(self, seconds):
        """Start a check if none is running; True when one has finished within `seconds`."""
        if self.thread is None:
            self.outcome = None
            self.thread = threading.Thread(target=self._run, name="server_wait-probe")
            self.thread.daemon = True
            self.thread.start()
        self.thread.join(seconds)
        return not self.thread.is_alive()

    def take(self):
        outcome, self.thread = self.outcome, None
        return bool(outcome)


POSITIVE_OPTIONS = ("timeout", "poll_interval", "request_timeout", "generate_timeout")


def wait_for_server(params: dict, check_mode: bool = False) -> dict:
    """Entry point for the module. Returns the result dict or raises WaitFailed (InvalidInput for bad options)."""
    for name in POSITIVE_OPTIONS:
        if params.get(name) is not None and params[name] <= 0:
            raise InvalidInput("%s must be greater than 0" % name)
    return Waiter(params).run(check_mode=check_mode)
