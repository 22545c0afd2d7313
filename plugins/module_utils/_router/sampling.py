# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The router's workers read over and over, for the rollout probe (_bench/probe.py): each reading
the healthy and listed worker URLs, or why the router could not be read (the probe goes on)."""

from __future__ import annotations

from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import RouterError, RouterKind
from ansible_collections.gpufleet.serving.plugins.module_utils._router.workers import from_params


def sample_row(kind: RouterKind, api: Any, when: float) -> dict:
    """The router's workers at WHEN: healthy and listed URLs, or why they could not be read."""
    try:
        workers = kind.workers(api)
    except RouterError as exc:
        return {"t": round(when, 3), "healthy": None, "listed": None, "error": str(exc)[:200]}
    return {"t": round(when, 3), "healthy": sorted(w.url for w in workers if w.healthy),
            "listed": sorted(w.url for w in workers), "error": None}


def sampler(params: dict) -> Callable[[float], dict]:
    """sample(when) for the router of the router group's options (doc fragment gpufleet.serving.router),
    once the router has answered: a router that does not answer fails here, before any load."""
    kind, api = from_params(params)
    kind.workers(api)
    return lambda when: sample_row(kind, api, when)
