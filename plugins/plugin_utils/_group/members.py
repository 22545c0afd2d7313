# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server groups of a play, planned on the controller from every host's variables.

The server_group lookup reads each host of the play (its hostvars), resolves its server's settings
as the server_spec lookup does, and hands them all to _server/group.py plan_groups(), which refuses a
bad group naming it and the host - before any module runs on any host.

A server request (an experiment variant's server_request: engine, overrides, drafter, env) applies
to every host alike: each node of a group runs the same variant, so a variant that sets `nodes`
(TP16 on two hosts against TP8 on one) is planned as the group it describes.
"""

from __future__ import annotations

from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _settings
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group as _group


def requested(engine_name: str, variables: Any, template: Callable[[Any], Any], request: Any = None,
              overrides: Any = None) -> dict:
    """The settings a host's VARIABLES give its server, with REQUEST's (a server request dict, or just the
    engine's name) drafter settings and overrides and OVERRIDES over them, as the server_spec lookup reads them."""
    request = request if isinstance(request, dict) else {}
    given = _settings.given_from(engine_name, variables, template)
    if request.get("drafter"):
        drafter = {s.name: template(variables["eagle_drafter_" + s.name])
                   for s in _settings.DRAFTER if "eagle_drafter_" + s.name in variables}
        given.update(_settings.drafter_overrides(engine_name, drafter))
    for extra in (request.get("overrides") or {}, overrides or {}):
        given.update({key: value for key, value in extra.items() if value is not None})
    return given


def plan_for(engine_name: str, host: str, hosts: list, hostvars: Any, template: Callable[[Any], Any],
             request: Any = None) -> dict:
    """HOST's entry of plan_groups() over HOSTS (each read from HOSTVARS[host], values through TEMPLATE, with
    REQUEST's settings over them), or {} for a host in no group. InvalidInput naming the group and the host for a
    group that cannot launch."""
    engine = _registry.get(engine_name)
    servers, addresses = {}, {}
    for name in hosts:
        variables = hostvars[name]
        servers[name] = _settings.server(engine, requested(engine.name, variables, template, request))
        addresses[name] = template(variables["ansible_host"]) if "ansible_host" in variables else name
    return _group.plan_groups(engine.name, servers, list(hosts), addresses).get(host, {})
