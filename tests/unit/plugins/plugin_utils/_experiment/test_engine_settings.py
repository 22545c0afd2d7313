# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""engine_settings.py: the one place that says which role runs an engine's server."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import engine_settings as es


@pytest.mark.parametrize("name", registry.names())
def test_an_engine_with_its_own_role_runs_through_it(name):
    assert es.server_role(name) == {
        "role": name + "_server", "own_role": True, "vars_prefix": name + "_server_",
        "result_fact": name + "_server_result", "teardown_fact": name + "_server_teardown"}


def test_an_engine_without_a_role_runs_the_internal_one_from_its_own_variables(monkeypatch):
    from tests.support.engines import toyserve_engine

    monkeypatch.setattr(registry, "ENGINES", registry.ENGINES + (toyserve_engine.ENGINE,))
    role = es.server_role("toyserve")
    assert (role["role"], role["own_role"], role["vars_prefix"]) == ("_server", False, "toyserve_server_")
    settings = es.engine_settings("toyserve")
    assert settings["role"] == "gpufleet.serving._server" and settings["own_role"] is False
    assert settings["result_fact"] == "toyserve_server_result"


@pytest.mark.parametrize("name", registry.names())
def test_the_playbooks_settings_name_the_same_role_as_server_role(name):
    settings, role = es.engine_settings(name), es.server_role(name)
    assert settings["role"] == "gpufleet.serving." + role["role"]
    assert {k: settings[k] for k in ("own_role", "vars_prefix", "result_fact", "teardown_fact")} \
        == {k: role[k] for k in ("own_role", "vars_prefix", "result_fact", "teardown_fact")}


def test_an_empty_name_is_the_default_engine_and_host_port_instance_apply():
    settings = es.engine_settings("", "::1", "9000", "")
    assert settings["name"] == registry.DEFAULT
    assert settings["url"] == "http://[::1]:9000" and settings["instance"] == "%s-9000" % registry.DEFAULT


def test_an_unknown_engine_names_the_choices():
    with pytest.raises(ValueError, match="engine must be one of .*not 'nope'"):
        es.engine_settings("nope")
    with pytest.raises(InvalidInput, match="unknown engine 'nope'; known engines"):
        es.server_role("nope")
