# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Each variant's fingerprint on each host: its own settings (load.fingerprint: engine, server,
speculative, env, benchmark from the experiment file) and the server settings the host's
variables give it (its ENGINE_server_* and eagle_drafter_* variables, from the inventory's host
and group variables or the command line, under the variant's own settings).

A variant's command line and environment come from both, so a record counts for a re-run only
while both are the same: a model path changed in the inventory runs the variant again instead
of showing the old model's figures under the new configuration.

Of the host's settings, those the server plan reads (settings.plan_options: what composes the
command line, the environment and the paths) enter the digest; the API key enters only as
whether one is set (a digest of a short key in a results file could be guessed back), and
`state` not at all (the role sets it per step).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterable, Mapping

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_settings

# resolve(host, server requests) -> that host's server spec of each request (the server_spec lookup's dicts).
Resolver = Callable[[str, list], Iterable[Mapping[str, Any]]]
# The fingerprint of a variant whose host settings could not be read: matches no record.
UNREAD = "unread: the host's server settings could not be read"


def measured_settings(spec: Mapping[str, Any]) -> dict:
    """The settings of SPEC (a server_spec dict) that reach the command line and environment."""
    options = server_settings.plan_options(dict(spec, state=spec.get("state") or "planned"))
    options.pop("state", None)
    options["api_key"] = bool(options.get("api_key"))
    return options


def digest(variant_fingerprint: str, spec: Mapping[str, Any]) -> str:
    """The fingerprint of a variant (its own VARIANT_FINGERPRINT) run from SPEC on a host."""
    doc = {"variant": variant_fingerprint, "server": measured_settings(spec)}
    return "sha256:" + hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def on_hosts(experiment: Mapping[str, Any], resolve: Resolver) -> tuple:
    """({host: {variant: fingerprint}} over EXPERIMENT's assignments, [problem lines]). A host whose
    settings RESOLVE cannot read gets UNREAD for each variant (each runs again; the host's own
    planning then fails naming the variable) and a line saying why."""
    variants = {v["name"]: v for v in experiment["variants"]}
    out, problems = {}, []
    for host, names in experiment["assignments"].items():
        try:
            specs = list(resolve(host, [variants[n]["server_request"] for n in names]))
        except Exception as exc:  # an undefined or mistyped variable: run again, say why
            out[host] = {n: UNREAD for n in names}
            problems.append("%s: its server settings could not be read (%s), so its recorded variants run again"
                            % (host, str(exc).strip() or type(exc).__name__))
            continue
        out[host] = {n: digest(variants[n]["fingerprint"], spec) for n, spec in zip(names, specs)}
    return out, problems
