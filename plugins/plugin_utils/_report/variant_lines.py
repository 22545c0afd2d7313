# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the variant playbooks (compare_engines.yml, experiment.yml) keep and print per variant:
the teardown part of a variant's record, and the plan a host shows before anything runs."""

from __future__ import annotations

import shlex
from typing import Any, Iterable, Mapping


def teardown_record(release: Any, halt: str = "", stop_error: str = "", kept: bool = False) -> dict:
    """The teardown of a variant's record from gpu_release's result after the stop.

    verified: the release verified every GPU free (no halt was set); kept: the server was left
    running (the next launch tears it down), so nothing was released or verified; gpus_free /
    gpus_used: the GPUs NVML read free / in use; killed: processes the release signalled;
    seconds: its time.
    """
    release = release if isinstance(release, Mapping) else {}
    gpus = [g for g in release.get("gpus") or [] if isinstance(g, Mapping) and "free" in g]
    return {
        "verified": not halt and not kept,
        "kept": bool(kept),
        "stop_error": stop_error or "",
        "gpus_selected": len(release.get("gpus_selected") or []),
        "gpus_free": sum(1 for g in gpus if g["free"]),
        "gpus_used": [g.get("index") for g in gpus if not g["free"]],
        "killed": len(release.get("killed") or []),
        "seconds": release.get("elapsed"),
    }


def _gpus(plan: Mapping[str, Any]) -> str:
    gpus = plan.get("gpus")
    visible = (plan.get("env") or {}).get("CUDA_VISIBLE_DEVICES")
    if visible:
        return "GPUs " + str(visible)
    if isinstance(gpus, list):
        return "GPUs " + ",".join(str(g) for g in gpus)
    return "all GPUs"


def plan_lines(planned: list, host: str, experiment: Mapping[str, Any]) -> list:
    """The plan a host prints before anything runs: per variant, in order, whether it runs or is
    skipped (recorded), the GPUs it takes and its composed command line."""
    todo = set((experiment.get("todo") or {}).get(host) or [])
    recorded = set((experiment.get("recorded") or {}).get(host) or [])
    name = experiment.get("name", "the experiment")
    lines = ["%s: %d variant(s) of %s, %d to run" % (host, len(planned), name, len(todo))]
    for number, plan in enumerate(planned, 1):
        name = plan.get("variant")
        state = "run" if name in todo else ("skip, recorded" if name in recorded else "skip")
        running = "; a server runs there now (it is torn down first)" if plan.get("running") else ""
        lines.append("%d. %s [%s] %s on %s%s" % (number, name, state, plan.get("engine"), _gpus(plan), running))
        lines.append("   " + shlex.join(str(a) for a in plan.get("argv") or []))
    return lines


def plan_block(plans: Mapping[str, Any], hosts: Iterable[str]) -> list:
    """Every host's plan (plan_lines) in one block, in HOSTS' order, as check mode prints it once
    at the end: hosts planned under `strategy: free` would interleave their lines otherwise. A
    host without a plan (its planning failed, its error is above) says so."""
    out = []
    for host in hosts:
        lines = plans.get(host)
        out += list(lines) if isinstance(lines, list) and lines else ["%s: no plan (its error is above)" % host]
    return out
