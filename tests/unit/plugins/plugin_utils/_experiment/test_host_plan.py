# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""host_plan: a host's drafter checks, server_plan batch items, plan entries and refusals."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry, settings
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import host_plan as hp

SPEC = {"algorithm": "EAGLE3", "draft_model_path": "/d", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}


def _server(engine, **given):
    return settings.server(registry.get(engine), dict({"model_path": "/m"}, **given))


def test_drafter_checks_cover_eagle3_drafters_and_every_host_drafter():
    servers = [_server("sglang"), _server("sglang", speculative=SPEC),
               _server("vllm", speculative=dict(SPEC, algorithm="ngram")), _server("vllm", speculative=dict(SPEC, algorithm="x"))]
    requests = [{}, {}, {}, {"drafter": True}]
    checks = hp.drafter_checks(servers, requests, ["base", "eagle", "ngram", "host-drafter"])
    assert [c["variant"] for c in checks] == ["eagle", "host-drafter"]
    assert checks[0] == {"variant": "eagle", "engine": "sglang", "draft_model_path": "/d", "target_model_path": "/m",
                         "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}


def test_plan_request_is_the_settings_server_plan_reads():
    item = hp.plan_request(_server("vllm", port=8001, ready_timeout=9), "systemd")
    assert item["service_mgr"] == "systemd" and item["settings"]["port"] == 8001
    assert "ready_timeout" not in item["settings"] and item["settings"]["instance"] == "vllm-8001"


def test_planned_zips_in_order_and_refuses_lists_that_differ():
    plans = [{"argv": ["a"], "running": True}, {"argv": ["b"], "running": False}]
    out = hp.planned([_server("sglang"), _server("vllm", gpus=[0, 1])], plans, ["x", "y"])
    assert [(p["variant"], p["engine"], p["gpus"], p["argv"]) for p in out] == [
        ("x", "sglang", "all", ["a"]), ("y", "vllm", [0, 1], ["b"])]
    with pytest.raises(ValueError, match="2 servers, 1 composed plans and 2 variants do not match"):
        hp.planned([_server("sglang")] * 2, plans[:1], ["x", "y"])


def test_refusal_names_the_failed_check_or_the_batch_item():
    loop = {"failed": True, "msg": "One or more items failed",
            "results": [{"item": {"variant": "a"}}, {"failed": True, "msg": "hidden_size differs", "item": {"variant": "b"}}]}
    assert hp.refusal(loop, ["a", "b"]) == {"variant": "b", "msg": "variant b: hidden_size differs"}
    assert hp.refusal({"msg": "batch item 2: bad", "batch_item": 2}, ["a", "b"]) == {
        "variant": "b", "msg": "variant b: batch item 2: bad"}
    assert hp.refusal({"msg": "unreachable"}, ["a"]) == {"variant": None, "msg": "unreachable"}
    assert hp.refusal(None, [])["msg"] == "failed"
