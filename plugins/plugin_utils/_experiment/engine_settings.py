# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the controller needs to know of an engine (a registry name): the role that runs its
server, the names of that role's variables and facts, its labels, its URL and instance.

The playbooks (the engine_settings filter, the _fleet role's fleet_engine) and the experiment
file's loader read the role from here, so the two cannot disagree on which role runs an
engine or on its variables' prefix.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry

# The engines the playbooks drive (their `engine` variable, default: the registry's first).
# Each has server variables NAME_server_* and facts NAME_server_result / NAME_server_teardown,
# set by its public role gpufleet.serving.NAME_server or, for an engine without one, by the
# internal _server role straight from those variables; its default port is the engine's
# (Engine.default_port).
DEFAULT_ENGINE = _registry.DEFAULT
COLLECTION = "gpufleet.serving."
# The internal role every engine's server runs through; the one an engine without a public
# role of its own is run by directly.
INTERNAL_ROLE = "_server"


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() in ("", "None"))


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def server_role(name: str) -> dict:
    """The role that runs the server of the engine NAME (a known registry name) and the names
    of its variables and facts: `role` (unqualified), `own_role` (whether it is the engine's
    own public role NAME_server), `vars_prefix`, `result_fact`, `teardown_fact`.

    The variables are NAME_server_* whichever role reads them: an engine without a public
    role runs the internal one straight from them.
    """
    spec = _registry.get(name)
    prefix = spec.name + "_server_"
    return {
        "role": prefix[:-1] if spec.server_role else INTERNAL_ROLE,
        "own_role": spec.server_role,
        "vars_prefix": prefix, "result_fact": prefix + "result", "teardown_fact": prefix + "teardown",
    }


def engine_settings(name: Any, host: Any = "", port: Any = "", instance: Any = "") -> dict:
    """What the playbooks need to know of the engine NAME (a registry name; empty: the default):
    its title, tested version, server role (and whether it is the engine's own), the names of that role's facts, the report labels, and with the
    server's HOST, PORT and INSTANCE variables (empty: the role's defaults) its URL and
    instance name. ValueError, naming the choices, for any other engine."""
    name = _text(name) or DEFAULT_ENGINE
    spec = _registry.find(name)
    if spec is None:
        others = ", ".join("-e engine=%s runs %s" % (e.name, e.title) for e in _registry.engines()
                           if e.name != DEFAULT_ENGINE)
        raise ValueError("engine must be one of %s, not %r (%s; leave it out for %s)"
                         % (", ".join(sorted(_registry.names())), name, others,
                            _registry.get(DEFAULT_ENGINE).title))
    host = "127.0.0.1" if _absent(host) else _text(host)
    port = spec.default_port if _absent(port) else int(port)
    role = server_role(name)
    return {
        "name": name, "title": spec.title, "tested_version": spec.tested_version,
        "role": COLLECTION + role["role"],
        "own_role": role["own_role"], "default_port": spec.default_port,
        "vars_prefix": role["vars_prefix"], "result_fact": role["result_fact"],
        "teardown_fact": role["teardown_fact"],
        "label": name, "eagle_label": name + "+eagle3",
        "url": "http://%s:%d" % ("[%s]" % host if ":" in host else host, port),
        "instance": "%s-%d" % (name, port) if _absent(instance) else _text(instance),
    }
