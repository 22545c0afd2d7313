# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_experiment/host_fingerprint.py: a variant's fingerprint on a host covers the server settings the
host's variables give it, not only the experiment file's."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry, settings
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import host_fingerprint as hf
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import server_requests

SG = registry.names()[0]


def spec(**given):
    return settings.server(registry.get(SG), dict({"model_path": "/models/a"}, **given))


@pytest.mark.parametrize("changed", [
    {"model_path": "/models/b"}, {"tp_size": 4}, {"env": {"NCCL_ALGO": "Ring"}}, {"extra_args": ["--x"]},
    {"python": "/opt/other/bin/python"}, {"api_key": "k"},
])
def test_a_setting_that_reaches_the_command_line_changes_the_fingerprint(changed):
    assert hf.digest("sha256:v", spec(**changed)) != hf.digest("sha256:v", spec())


def test_the_same_settings_give_the_same_fingerprint_and_the_key_enters_only_as_set():
    assert hf.digest("sha256:v", spec()) == hf.digest("sha256:v", spec())
    assert hf.digest("sha256:v", spec(api_key="k1")) == hf.digest("sha256:v", spec(api_key="k2"))
    assert "k1" not in repr(hf.measured_settings(spec(api_key="k1")))
    assert hf.digest("sha256:v", spec()) != hf.digest("sha256:w", spec())


def _experiment():
    variants = [{"name": "base", "engine": SG, "server": {}, "speculative": None, "env": {}, "fingerprint": "sha256:b"},
                {"name": "tp4", "engine": SG, "server": {"tp_size": 4}, "speculative": None, "env": {},
                 "fingerprint": "sha256:t"}]
    return server_requests.add_server_requests({"variants": variants, "assignments": {"h1": ["base", "tp4"],
                                                                                      "h2": ["base"]}})


def test_on_hosts_resolves_each_hosts_variables_under_the_variants_settings():
    models = {"h1": "/models/a", "h2": "/models/b"}

    def resolve(host, requests):
        return [settings.server(registry.get(r["engine"]), dict({"model_path": models[host], "tp_size": 8},
                                                                **r["overrides"])) for r in requests]

    prints, problems = hf.on_hosts(_experiment(), resolve)
    assert problems == []
    assert prints["h1"]["base"] == hf.digest("sha256:b", spec(tp_size=8))
    assert prints["h1"]["tp4"] == hf.digest("sha256:t", spec(tp_size=4))
    assert prints["h2"]["base"] != prints["h1"]["base"]  # the same variant, another host's model


def test_a_host_whose_variables_cannot_be_read_runs_its_variants_again():
    def resolve(host, requests):
        if host == "h2":
            raise ValueError("server_spec: sglang_server_tp_size: 'x' is not an int")
        return [spec() for unused in requests]

    prints, problems = hf.on_hosts(_experiment(), resolve)
    assert prints["h2"] == {"base": hf.UNREAD} and prints["h1"]["base"].startswith("sha256:")
    assert problems == ["h2: its server settings could not be read (server_spec: sglang_server_tp_size: 'x' is "
                        "not an int), so its recorded variants run again"]
