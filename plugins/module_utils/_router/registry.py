# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The routers the collection drives, one file each in this package (as _engines/ has the engines).

A second kind (vLLM's router, haproxy's runtime API) is one file with a RouterKind subclass and
its KIND, imported here and added to KINDS. The imports are written out (not discovered) because
Ansible ships a module only the module_utils files its imports name.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._router import sglang_router as _sglang_router
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import RouterKind

# The first is the default.
KINDS = (_sglang_router.KIND,)
DEFAULT = KINDS[0].name


def names() -> list:
    return [k.name for k in KINDS]


def get(name: str | None) -> RouterKind:
    """The router kind called NAME (empty: the default); InvalidInput naming the choices otherwise."""
    found = next((k for k in KINDS if k.name == (name or DEFAULT)), None)
    if found is None:
        raise InvalidInput("unknown router kind %r; known kinds: %s" % (name, ", ".join(names())))
    return found


def connection_spec() -> dict:
    """The argument spec of the options every router module takes to reach the router (documented once, in
    the gpufleet.serving.router doc fragment)."""
    return dict(
        router_url=dict(type="str", required=True),
        api_key=dict(type="str", no_log=True),
        validate_certs=dict(type="bool", default=True),
        router_kind=dict(type="str", default=DEFAULT, choices=names()),
        request_timeout=dict(type="float", default=10),
    )
