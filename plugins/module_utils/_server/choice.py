# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which plan the _server role acts on: server_plan's answer, or the plan its caller already has.

Kept apart from plan.py (which composes and reads what runs): the role's filters ask this on the
controller at each start and stop, and Ansible compiles every collection module a filter imports in
each worker process, so this one imports nothing of the collection but its error type.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def choose_supervisor(requested: str, service_mgr: str | None) -> str:
    if requested:
        return requested
    return "systemd" if service_mgr == "systemd" else "process"


def reuse_key(settings: dict[str, Any], service_mgr: str) -> dict[str, Any]:
    """What a stop's plan depends on (it reads only the plan's paths and supervisor): the engine, the
    instance, the directories, the supervisor and the host's service manager."""
    return {"engine": settings["engine"], "instance": settings["instance"], "log_dir": settings["log_dir"],
            "state_dir": settings["state_dir"], "supervisor": settings["supervisor"], "service_mgr": service_mgr}


def choose(settings: dict[str, Any], service_mgr: str = "", last: dict | None = None, last_of: dict | None = None,
           reuse: bool = False, given: dict | None = None, verified_free: bool = False,
           dirs_used: list | None = None) -> dict[str, Any]:
    """Whether the server role calls server_plan (`call`), or the plan it takes instead (`plan`), and the
    reuse key of the plan it keeps (`of`).

    A stop with REUSE takes LAST, the host's last plan, when it was composed for the same reuse key
    (LAST_OF). A stop with GIVEN (what a planned pass returned for the same settings: a stop reads only
    its paths and supervisor) takes it. A start with VERIFIED_FREE (the caller has just proven every GPU free with NVML) takes
    GIVEN (what a planned pass returned for the same settings, decision relaunch: the engine's version
    and entry point read as before a relaunch) with what runs read as nothing, since no server of this
    instance can run on free GPUs; its directories are ready when they were, or when a launch on this
    host has used them since (DIRS_USED).

    A server to start (or plan) without a model path is refused, naming the variable."""
    if settings["state"] != "stopped" and not settings.get("model_path"):
        raise InvalidInput("%smodel_path is required to start a server (state %s)"
                           % (settings.get("vars_prefix") or "", settings["state"]))
    key = reuse_key(settings, service_mgr)
    if settings["state"] == "stopped" and reuse and last and last_of == key:
        return {"call": False, "plan": last, "of": key}
    if settings["state"] == "stopped" and given:
        return {"call": False, "plan": given, "of": key}
    if settings["state"] == "started" and verified_free and (given or {}).get("decision") == "relaunch":
        plan = dict(given, running=False, pid=None, recorded_fingerprint="", health_status=None, decision="relaunch",
                    keep=False, dirs_ready=bool(given.get("dirs_ready"))
                    or list(dirs_used or []) == [settings["log_dir"], settings["state_dir"]])
        return {"call": False, "plan": plan, "of": key}
    return {"call": True, "plan": None, "of": key}
