# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The router registry: the default kind, lookup by name, an unknown name naming the choices,
and every kind a complete RouterKind with a metrics port."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpufleet.serving.plugins.doc_fragments.router import ModuleDocFragment as Router
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import RouterKind


def test_the_default_is_sglang_router_and_names_list_every_kind():
    assert registry.DEFAULT == "sglang-router" and registry.get(None).name == "sglang-router"
    assert registry.names() == [k.name for k in registry.KINDS]


def test_an_unknown_kind_names_the_known_ones():
    with pytest.raises(InvalidInput, match=r"unknown router kind 'haproxy'; known kinds: sglang-router"):
        registry.get("haproxy")


@pytest.mark.parametrize("kind", registry.KINDS, ids=registry.names())
def test_every_kind_overrides_the_admin_calls_and_has_a_metrics_port(kind):
    assert isinstance(kind, RouterKind) and kind.default_metrics_port > 0
    for method in ("workers", "add", "remove"):
        assert getattr(type(kind), method) is not getattr(RouterKind, method), (kind.name, method)


def test_the_connection_spec_is_what_the_router_doc_fragment_documents():
    documented = yaml.safe_load(Router.DOCUMENTATION)["options"]
    spec = registry.connection_spec()
    assert sorted(spec) == sorted(documented)
    assert {name: opt.get("default") for name, opt in spec.items()} == {
        name: opt.get("default") for name, opt in documented.items()}
    assert spec["api_key"]["no_log"] is True
