# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server groups of a play, planned on the controller from every host's variables.

The server_group lookup reads each host of the play (its hostvars), resolves its server's settings
as the server_spec lookup does, and hands them all to _server/group.py plan_groups(), which refuses a
bad group naming it and the host - before any module runs on any host.
"""

from __future__ import annotations

from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _settings
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group as _group


def plan_for(engine_name: str, host: str, hosts: list, hostvars: Any, template: Callable[[Any], Any]) -> dict:
    """HOST's entry of plan_groups() over HOSTS (each read from HOSTVARS[host], values through TEMPLATE), or {} for a
    host in no group. InvalidInput naming the group and the host for a group that cannot launch."""
    engine = _registry.get(engine_name)
    servers, addresses = {}, {}
    for name in hosts:
        variables = hostvars[name]
        servers[name] = _settings.server(engine, _settings.given_from(engine.name, variables, template))
        addresses[name] = template(variables["ansible_host"]) if "ansible_host" in variables else name
    return _group.plan_groups(engine.name, servers, list(hosts), addresses).get(host, {})
