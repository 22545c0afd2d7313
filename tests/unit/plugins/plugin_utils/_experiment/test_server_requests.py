# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""server_requests: what each experiment variant asks of a host's server."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import server_requests as sr


def _variant(engine, speculative=None, **server):
    return {"name": "v", "engine": engine, "server": server, "speculative": speculative, "env": {"A": "1"}}


def test_a_base_variant_turns_every_speculative_input_off():
    request = sr.server_request(_variant("sglang", port=30001, mem_fraction_static=None))
    assert request == {"engine": "sglang", "drafter": False, "env": {"A": "1"},
                       "overrides": {"port": 30001, "speculative": {}, "speculative_args": []}}
    assert sr.server_request(_variant("vllm"))["overrides"] == {"speculative": {}, "speculative_config": {}}


def test_a_variant_with_its_own_drafter_and_one_with_the_host_drafter():
    spec = {"algorithm": "EAGLE3", "draft_model_path": "/d"}
    assert sr.server_request(_variant("sglang", spec))["overrides"]["speculative"] == spec
    host = sr.server_request(_variant("vllm", "eagle_drafter", tp_size=4))
    # The host's eagle_drafter_* variables set the speculative settings (the lookup's drafter).
    assert host["drafter"] and host["overrides"] == {"tp_size": 4}


def test_every_variant_gets_its_request():
    experiment = {"variants": [_variant("sglang"), _variant("vllm", "eagle_drafter")]}
    assert [v["server_request"]["drafter"] for v in sr.add_server_requests(experiment)["variants"]] == [False, True]
