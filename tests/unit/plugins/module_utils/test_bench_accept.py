# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prometheus parsing, flavor detection and acceptance from counter deltas."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import accept as ba
from ansible_collections.gpufleet.serving.plugins.module_utils._http import Response

PAGE = """# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="kimi {k2}",tp_rank="0"} 1000.0
sglang:generation_tokens_total{model_name="kimi {k2}",tp_rank="1"} 500.0
sglang:generation_tokens_created{model_name="kimi {k2}"} 1.7e+09
sglang:spec_verify_calls_total{model_name="kimi \\"q\\" x"} 600 1712345678000
sglang:spec_accept_length 2.5
bad_line_without_value
"""


def test_parse_sums_label_sets_and_drops_created():
    m = ba.parse_prometheus(PAGE)
    assert m["sglang:generation_tokens_total"] == 1500.0
    assert m["sglang:spec_verify_calls_total"] == 600.0
    assert m["sglang:spec_accept_length"] == 2.5
    assert "sglang:generation_tokens_created" not in m


@pytest.mark.parametrize("names, expected", [
    ("sglang:spec_verify_calls", 600.0),
    (("sglang:spec_verify_calls", "sglang:spec_verify_ct"), 600.0),
    ("sglang:spec_accept_length", 2.5),
    ("vllm:spec_decode_num_drafts", None),
])
def test_counter_with_or_without_total(names, expected):
    assert ba.counter(ba.parse_prometheus(PAGE), names) == expected


def test_sglang_acceptance_is_the_delta_not_the_total():
    before = {"sglang:generation_tokens_total": 1e6, "sglang:spec_verify_calls_total": 1e6}
    after = {"sglang:generation_tokens_total": 1e6 + 300, "sglang:spec_verify_calls_total": 1e6 + 100}
    assert ba.sglang_acceptance(before, after) == (3.0, "metrics")


def test_sglang_alias_counter_name():
    before = {"sglang:generation_tokens_total": 10, "sglang:spec_verify_ct_total": 5}
    after = {"sglang:generation_tokens_total": 35, "sglang:spec_verify_ct_total": 15}
    assert ba.sglang_acceptance(before, after) == (2.5, "metrics")


def test_no_verify_step_means_not_speculative():
    m = {"sglang:generation_tokens_total": 10, "sglang:spec_verify_calls_total": 5}
    assert ba.sglang_acceptance(m, dict(m)) == (None, "metrics")
    assert ba.sglang_acceptance({"sglang:generation_tokens_total": 1}, {"sglang:generation_tokens_total": 9}) \
        == (None, None)


def test_vllm_acceptance_one_plus_accepted_per_draft():
    before = {"vllm:spec_decode_num_drafts_total": 500.0, "vllm:spec_decode_num_accepted_tokens_total": 250.0}
    after = {"vllm:spec_decode_num_drafts_total": 600.0, "vllm:spec_decode_num_accepted_tokens_total": 400.0}
    assert ba.vllm_acceptance(before, after) == (2.5, "metrics")
    assert ba.vllm_acceptance(before, None) == (None, None)


@pytest.mark.parametrize("info, expected", [
    ({"speculative_algorithm": "EAGLE3", "internal_states": [{"avg_spec_accept_length": 2.71}]}, (2.71, "server_info")),
    ({"speculative_algorithm": None, "internal_states": [{"avg_spec_accept_length": 1.0}]}, (None, "server_info")),
    ({"internal_states": [{}]}, (None, None)),
    (None, (None, None)),
])
def test_server_info_fallback(info, expected):
    assert ba.sglang_server_info_acceptance(info) == expected


@pytest.mark.parametrize("models, metrics, info, flavor", [
    ({"data": [{"id": "m", "owned_by": "sglang"}]}, "", None, "sglang"),
    ({"data": [{"id": "m", "owned_by": "vllm"}]}, "", None, "vllm"),
    ({"data": [{"id": "m", "owned_by": "me"}]}, "vllm:num_requests_running 0\n", None, "vllm"),
    ({"data": [{"id": "m", "owned_by": "me"}]}, "", {"tp_size": 8, "internal_states": []}, "sglang"),
    (None, "", None, "unknown"),
])
def test_detect_flavor(models, metrics, info, flavor):
    assert ba.detect_flavor(models, metrics, info) == flavor


class FakeClient:
    def __init__(self, pages, info=None):
        self.pages = list(pages)
        self.info = info

    def get(self, path):
        assert path == "/metrics"
        if not self.pages:
            return Response(404, b"")
        return Response(200, self.pages.pop(0).encode())

    def get_json(self, path):
        return self.info


def test_meter_falls_back_to_server_info_without_metrics():
    meter = ba.AcceptanceMeter(FakeClient([], {"speculative_algorithm": "EAGLE3",
                                               "internal_states": [{"avg_spec_accept_length": 3.1}]}), "sglang")
    before = meter.snapshot()
    assert before is None
    assert meter.measure(before) == (3.1, "server_info")


def test_meter_unknown_flavor_reads_nothing():
    meter = ba.AcceptanceMeter(FakeClient([]), "unknown")
    assert meter.snapshot() is None and meter.measure(None) == (None, None)
