# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A level's counted requests per workload category: counts, latencies, and acceptance from
SGLang's per-request spec_tokens_details, checked against hand-computed figures."""

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.categories import by_category, with_pass
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Record
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.items import Item


def _record(start, first, end, tokens, verify=None, error=None):
    r = Record()
    r.status, r.start, r.first, r.end, r.error = 200, start, first, end, error
    r.chunk_times = [first, end]
    r.completion_tokens = tokens
    r.prompt_tokens = 10
    r.spec = {"spec_verify_ct": verify, "spec_accept_length": 0.0} if verify else None
    return r


def _item(category, turns=1):
    return Item("t", category, [{"role": "user", "content": "x"}], ("y",) * (turns - 1))


def test_counted_requests_split_by_category_with_acceptance_from_the_requests():
    items = [_item("code"), _item("code"), _item("chat", turns=2), _item("code")]
    records = [
        _record(0.0, 0.1, 1.0, 9, verify=3),                     # warm-up: not counted
        _record(0.0, 0.2, 1.2, 11, verify=4),
        [_record(0.0, 0.1, 0.5, 5, verify=5), _record(0.5, 0.8, 1.8, 21, verify=10)],
        _record(0.0, 0.4, 2.0, 9, verify=2),
    ]
    got = by_category(records, items, warmup=1)
    assert sorted(got) == ["chat", "code"]
    code, chat = got["code"], got["chat"]
    assert (code["requests"], code["completed"], code["output_tokens"]) == (2, 2, 20)
    assert code["accept_length"] == round(20 / 6.0, 3) and code["accept_source"] == "request"
    assert chat["requests"] == 2 and chat["accept_length"] == round(26 / 15.0, 3)
    assert code["ttft_ms"]["mean"] == 300.0 and code["latency_ms"]["p50"] == 1600.0
    assert chat["tpot_ms"]["mean"] == round(((0.4 / 4) + (1.0 / 20)) / 2 * 1000, 3)


def test_no_categories_or_no_spec_details():
    items = [_item(None), _item(None)]
    records = [_record(0.0, 0.1, 1.0, 4), _record(0.0, 0.1, 1.0, 4)]
    assert by_category(records, items, warmup=0) is None
    assert by_category(records, None, warmup=0) is None
    got = by_category(records, [_item("a"), _item("a")], warmup=0)["a"]
    assert got["accept_length"] is None and got["accept_source"] is None and got["failed"] == 0


PASS = {"requests": 8, "completed": 8, "failed": 0, "output_tok_s": 412.5, "level_output_tokens": 256,
        "level_span_s": 0.62, "server_tok_s": 413.0, "server_ratio": 1.0, "ttft_ms": {"p50": 9.0},
        "tpot_ms": {"p50": 2.0}, "accept_length": 3.1, "accept_source": "metrics", "errors": []}


@pytest.mark.parametrize("mixed_accept, request_accept, accept, source", [
    # vLLM: nothing per request, so the pass's counters give the category's acceptance.
    (None, None, 3.1, "pass_metrics"),
    # SGLang: the mixed level's per-request figure stays; the pass's own counters sit beside it.
    (2.9, 3.05, 2.9, "request"),
])
def test_a_category_pass_gives_tok_s_and_names_each_figures_source(mixed_accept, request_accept, accept, source):
    records = [_record(0.0, 0.1, 1.0, 12, verify=4 if mixed_accept else None)]
    mixed = by_category(records, [_item("code")], warmup=0)["code"]
    assert mixed["output_tok_s"] is None and mixed["output_tok_s_source"] is None
    if mixed_accept:
        mixed["accept_length"] = mixed_accept
    per_request = {"accept_length": request_accept} if request_accept else None
    got = with_pass(mixed, PASS, per_request)
    assert (got["output_tok_s"], got["output_tok_s_source"]) == (412.5, "pass")
    assert (got["accept_length"], got["accept_source"]) == (accept, source)
    assert got["own_pass"]["accept_length"] == 3.1 and got["own_pass"]["request_accept_length"] == request_accept
    assert "errors" not in got["own_pass"] and got["own_pass"]["server_tok_s"] == 413.0
    assert got["ttft_ms"] == mixed["ttft_ms"]  # latencies stay the mixed level's


def test_sglang_extension_chunk_gives_the_requests_spec_details():
    # The shape of SGLang 0.5.23's extension chunk: no choices, `sglext` at the response level
    # (srt/entrypoints/openai/serving_chat.py, protocol.py SglExt and SpecTokensDetails).
    r = Record()
    r.on_status(200, {}, 0.0)
    r.on_event(b'{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
               b'"delta":{"content":"hi"},"finish_reason":null}]}', 0.1)
    r.on_event(b'{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"sglext":'
               b'{"spec_tokens_details":[{"spec_accept_rate":0.5,"spec_accept_length":2.5,"spec_verify_ct":4}]}}', 0.2)
    assert r.spec == {"spec_accept_rate": 0.5, "spec_accept_length": 2.5, "spec_verify_ct": 4}
    assert r.error is None and r.chunk_times == [0.1]
