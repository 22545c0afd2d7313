# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine role variables (ENGINE_server_*) each experiment variant sets on a host.

A play cannot unset a fact, so a setting one variant changes must be set by every variant
that follows: each variant sets every key any variant of the experiment sets, its own value
or else the host's (inventory) value, or else the role's default (`defaults`, the server spec
table's: plugins/module_utils/_engines/settings.py). A default the role computes from another variable (a Jinja
expression, such as the instance name from the port) cannot be carried that way, so such a
setting is refused unless every variant of its engine sets it.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_spec
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# Speculative settings other than the neutral `speculative` dict: emptied for every variant so
# the inventory's (an EAGLE-3 swap's) cannot leak into a base variant.
SPECULATIVE_EXTRAS = ("speculative_args", "speculative_config")


def role_defaults(role: str) -> dict:
    """The role's variables as the role sees them when nothing is set (its defaults/main.yml is
    generated from the same table)."""
    engine = role[:-len("_server")]
    return {"%s_%s" % (role, s.name): server_spec.role_default(s, engine) for s in server_spec.settings_for(engine)}


def _computed(value) -> bool:
    return isinstance(value, str) and "{{" in value


def variant_vars(variant: dict, defaults: dict) -> dict:
    """The variables VARIANT sets itself: its server settings, its speculative settings (None: a
    base server) and the other speculative inputs emptied."""
    prefix = variant["vars_prefix"]
    # A null setting leaves the host's value (or the role's default), as the file format says.
    out = {prefix + key: value for key, value in variant["server"].items() if value is not None}
    # A drafter from the host's eagle_drafter_* variables is set by that role when it launches.
    speculative = variant.get("speculative")
    out[prefix + "speculative"] = speculative if isinstance(speculative, dict) else None
    for key in SPECULATIVE_EXTRAS:
        if prefix + key in defaults:
            out[prefix + key] = type(defaults[prefix + key])()
    return out


def add_role_vars(experiment: dict) -> dict:
    """EXPERIMENT with `role_vars` on each variant and `defaults` (every key some variant sets,
    with the role's default) on the whole; InvalidInput for a computed default not set by every
    variant of its engine."""
    by_role = {}
    union = {}
    for variant in experiment["variants"]:
        defaults = by_role.setdefault(variant["role"], role_defaults(variant["role"]))
        variant["role_vars"] = variant_vars(variant, defaults)
        for key in variant["role_vars"]:
            union[key] = defaults.get(key)
        union.setdefault(variant["vars_prefix"] + "env", defaults.get(variant["vars_prefix"] + "env") or {})
    for key, default in union.items():
        if not _computed(default):
            continue
        owners = [v for v in experiment["variants"] if key.startswith(v["vars_prefix"])]
        missing = [v["name"] for v in owners if key not in v["role_vars"]]
        if missing:
            raise InvalidInput(
                "%s: server.%s is set by some variants but not by %s; its default is computed (%s), so set it in "
                "every variant of that engine or in none" % (
                    experiment.get("file", "the experiment"), key[len(owners[0]["vars_prefix"]):],
                    ", ".join(missing), default))
    experiment["defaults"] = {k: v for k, v in union.items() if not _computed(v)}
    return experiment
