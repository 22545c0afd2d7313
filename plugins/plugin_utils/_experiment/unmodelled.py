# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which of a variant's server settings a simulated fleet does not model.

The simulated fleet's inventory lists, per engine, the command-line flags its simulated server
reads (sim/simlib/fleet_inventory.py writes `fleet_simulator_models` from the simulator's own
table). A setting the simulator never reads leaves the figures as they are, so two variants
that differ only there get equal rows: the report says so instead of letting them read as a
measured non-effect. A real fleet has no such list and gets no note.
"""

from __future__ import annotations

from typing import Any, Mapping

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry

# Server settings of the roles that are not engine flags (where and how the role runs the server).
ROLE_ONLY = frozenset(("python", "entry_point", "gpus", "instance", "log_dir", "state_dir", "ready_timeout",
                       "progress_interval", "supervisor", "stop_timeout", "extra_args", "env",
                       "release_engine", "release_patterns", "release_sweep_users", "release_term_timeout",
                       "release_timeout"))
# Settings every simulator takes as they are: the model it serves, the key it checks (which the
# role hands over in a --config file).
ALWAYS_MODELLED = frozenset(("model_path", "api_key"))


def _engine_flags(engine: Any) -> dict:
    """{setting: flag} of ENGINE's option table; empty for an engine the registry does not know (the
    settings' own names stand)."""
    found = registry.find(engine)
    return {option: flag for option, flag, unused in found.option_flags if flag} if found else {}


def given_flags(server: Mapping[str, Any], engine: Any = None) -> list:
    """The engine flags a variant's SERVER settings give: each setting as ENGINE spells it (its option
    table: tp_size is vLLM's --tensor-parallel-size), else as --its-name, and each --flag of
    extra_args (without its value), in order, once each."""
    spelled = _engine_flags(engine) if engine else {}
    flags = [spelled.get(key) or "--" + str(key).replace("_", "-") for key in server or {}
             if key not in ROLE_ONLY and key not in ALWAYS_MODELLED]
    flags += [str(arg).split("=", 1)[0] for arg in (server or {}).get("extra_args") or []
              if str(arg).startswith("--")]
    return list(dict.fromkeys(flags))


def unmodelled(variant: Mapping[str, Any], models: Mapping[str, Any]) -> list:
    """The flags VARIANT gives that the simulator of its engine does not read (MODELS: {engine:
    [flags]}); none when MODELS does not cover the engine (a real fleet, or an engine it does not list)."""
    modelled = (models or {}).get(variant.get("engine"))
    if not isinstance(modelled, list):
        return []
    return [f for f in given_flags(variant.get("server") or {}, variant.get("engine")) if f not in set(modelled)]


def notes(experiment: Mapping[str, Any], models: Mapping[str, Any]) -> list:
    """One report note per variant with settings the simulated fleet does not model."""
    out = []
    for variant in experiment.get("variants") or []:
        flags = unmodelled(variant, models)
        if flags:
            out.append("%s: the simulated fleet does not model %s: its figures are those without them"
                       % (variant["name"], ", ".join(flags)))
    return out
