# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The keys an experiment file may use, each from the table where the option is defined.

- a variant's ``server``: the engine's server settings (the server spec table,
  plugins/module_utils/_engines/settings.py), less those the experiment sets through its own keys;
- a variant's ``speculative``: the keys of the neutral ``speculative`` setting (the same table's
  SPECULATIVE rows, server_plan's ``speculative`` suboptions);
- ``benchmark``: llm_benchmark's options a playbook may set (plugins/module_utils/_bench/options.py;
  the _fleet role's ``fleet_benchmark`` suboptions and the fleet playbooks' ``benchmark`` variable
  take the same keys).

Nothing here reads a file: an installed collection and the checkout behave alike.
"""

from __future__ import annotations

import functools

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import options as bench_options
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_spec

# The file's own keys: (type, meaning), in the order docs/playbooks.md shows them (generated there).
TOP_FORMAT = {
    "name": ("str", "the experiment's name (default: the file name without .yml and .experiment)"),
    "reference": ("str", "required: the variant every other one is compared with (a name after the matrices)"),
    "spread": ("bool", "true: identical hosts share the variants, host i of N runs variants i, i+N, ...; "
                       "false (default): every host runs every variant"),
    "max_variants": ("int", "the most variants a file may expand to without confirmation (default 32)"),
    "confirm_large": ("bool", "run more than max_variants (as the playbook's experiment_confirm)"),
    "category_level": ("int", "the concurrency the per-category table compares (default: the lowest at which every "
                              "variant has per-category figures); one not measured on every side falls back to "
                              "that, with a warning"),
    "benchmark": ("dict", "llm_benchmark settings shared by every variant (keys below)"),
    "gates": ("dict", "limits every variant must meet (gates below); the reference is never gated on speed-up"),
    "variants": ("list", "required: the variants (keys below), in the order each host runs them"),
}
VARIANT_FORMAT = {
    "name": ("str", "required: the variant's name, unique in the file"),
    "engine": ("str", "required: the engine (its server role runs the variant)"),
    "server": ("dict", "the engine's server role variables without the ENGINE_server_ prefix (keys below); "
                       "one left out keeps the host's value or the role's default"),
    "speculative": ("dict", "speculative decoding, as server_plan's speculative option (keys below); "
                            "eagle_drafter: each host's eagle_drafter_* variables, launched through that role; "
                            "none: a base server"),
    "env": ("dict", "environment variables of the server, over the host's"),
    "benchmark": ("dict", "benchmark settings merged key by key over the top-level benchmark"),
    "gates": ("dict", "gates merged key by key over the top-level gates"),
    "matrix": ("dict", "server keys, each with a list of values: one variant per combination, named "
                       "NAME-KEYVALUE-KEYVALUE, the last key changing fastest"),
}
TOP_KEYS = tuple(TOP_FORMAT)
VARIANT_KEYS = tuple(VARIANT_FORMAT)
# Role options the experiment sets through its own keys (or the playbook sets): the variant's
# `speculative` and `env`, and the state the playbook drives.
SERVER_OWN_KEYS = {"state": "the playbook starts and stops each variant",
                   "speculative": "use the variant's `speculative` key",
                   "speculative_args": "use the variant's `speculative` key",
                   "speculative_config": "use the variant's `speculative` key",
                   "env": "use the variant's `env` key"}


@functools.lru_cache(maxsize=None)
def server_options(role):
    """{setting: its spec (type, elements, choices)} of ROLE's engine (ROLE is ENGINE_server), from
    the server spec table."""
    engine = role[:-len("_server")] if role.endswith("_server") else role
    out = {}
    for setting in server_spec.settings_for(engine):
        if setting.name in SERVER_OWN_KEYS:
            continue
        opt = {"type": setting.type}
        if setting.elements:
            opt["elements"] = setting.elements
        if setting.choices is not None:
            opt["choices"] = list(setting.choices)
        out[setting.name] = opt
    return out


def speculative_options():
    """{key: its spec (type, default or required)} of the `speculative` setting (server_plan's suboptions)."""
    return server_spec.speculative_spec()


def benchmark_options():
    """{key: its spec (type, elements, choices, description)} of the benchmark keys (fleet_benchmark's
    suboptions, llm_benchmark's options of those names)."""
    return bench_options.kinds()


def _is(value, kind):
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("str", "path"):
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    return True  # raw: anything


def type_problem(value, spec):
    """Why VALUE does not fit an argument spec SPEC (type, elements, choices), or None.

    Strict where Ansible would convert: a number where a word is wanted is a likely typo in
    a file meant to be read by people. A list of words takes numbers (flags' values: 512)."""
    kind = spec.get("type", "str")
    if value is None:
        return None  # null leaves the role's default
    if not _is(value, kind):
        return "must be %s, not %s %r" % (_KIND_WORDS.get(kind, kind), type(value).__name__, value)
    if kind == "list" and spec.get("elements"):
        elem = spec["elements"]
        for i, item in enumerate(value):
            ok = _is(item, elem) or (elem == "str" and _is(item, "float"))
            if not ok:
                return "item %d must be %s, not %s %r" % (i, _KIND_WORDS.get(elem, elem), type(item).__name__, item)
    if spec.get("choices") and value not in spec["choices"]:
        return "must be one of %s, not %r" % (", ".join(repr(c) for c in spec["choices"]), value)
    return None


_KIND_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "a string",
               "path": "a path (string)", "list": "a list", "dict": "a mapping"}
