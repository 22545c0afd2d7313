# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What each experiment variant asks of a host's server: its `server_request`, the term the
server_spec lookup turns into the server's settings on that host.

The host's own ENGINE_server_* variables stay as they are; each variant's settings are overrides
over them, read fresh for every variant (nothing is kept between variants, so a setting one
variant changes is back to the host's value for the next, a computed default such as the instance
follows the variant's own port). A variant with `speculative: eagle_drafter` takes the host's
eagle_drafter_* variables (the lookup's `drafter`); any other has its own speculative settings or
none, and the engine's other speculative inputs (speculative_args, speculative_config) emptied, so
the inventory's (an EAGLE-3 swap's) cannot leak into a base variant.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_spec
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.load import FROM_DRAFTER_ROLE


def server_request(variant: dict) -> dict:
    """VARIANT's server_spec lookup term: engine, overrides, drafter, env."""
    engine = variant["engine"]
    drafter = variant.get("speculative") == FROM_DRAFTER_ROLE
    # A null setting leaves the host's value (or the table's default), as the file format says.
    overrides = {key: value for key, value in variant["server"].items() if value is not None}
    if not drafter:
        speculative = variant.get("speculative")
        overrides["speculative"] = speculative if isinstance(speculative, dict) else {}
        for name in server_spec.SPECULATIVE_EXTRAS:
            setting = server_spec.find(name)
            if setting.applies_to(engine):
                overrides[name] = server_spec.default(setting, engine)
    return {"engine": engine, "overrides": overrides, "drafter": drafter, "env": dict(variant.get("env") or {})}


def add_server_requests(experiment: dict) -> dict:
    """EXPERIMENT with `server_request` on each variant."""
    for variant in experiment["variants"]:
        variant["server_request"] = server_request(variant)
    return experiment
