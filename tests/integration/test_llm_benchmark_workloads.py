# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llm_benchmark with natural-text workloads (the built-in set, a JSONL file) against the
test server on loopback: what it sent (the server's request events), the conversation of a
multi-turn item, the per-request records, and a refused request counted as a failure.
sim_server is a fixture of test_llm_benchmark.py, imported for the tests here."""

from __future__ import annotations

import json
import math
import os
import subprocess

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.run import benchmark, run_benchmark
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.builtin import BUILTIN
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.sample import load_workload
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from tests.integration.test_llm_benchmark import (  # noqa: F401 pylint: disable=unused-import
    EAGLE3,
    PY,
    REPO,
    SIM_DRAFT,
    ansible_module,
    params,
    sim_server,
)
from tests.sim._server_fixtures import VllmServer, sim_text
from tests.support import paths


def _events(path):
    with open(path) as f:
        return [json.loads(line) for line in f if '"request"' in line]


def _posts(path):
    return [e["body"] for e in _events(path) if e.get("path", "").startswith("/v1/") and e.get("body")]


def _lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_builtin_workload_sends_every_category_as_chat_with_records(server, tmp_path):
    events, records = tmp_path / "events.jsonl", tmp_path / "records.jsonl"
    s = server("--rate", "0", "--ttft", "0", "--events", str(events))
    res = run_benchmark(params(s.url, api=None, levels=[4], requests_per_level=80, warmup_requests=0,
                               workload={"source": "builtin"}, request_records=str(records)))
    info = res["workload"]
    assert info["source"] == "builtin" and info["sample"] == 80 and len(info["sha256"]) == 64
    assert info["categories"] == {c: len(p) for c, p in BUILTIN.items()}
    assert res["config"]["api"] == "chat"
    multi = sum(1 for prompts in BUILTIN.values() for p in prompts if not isinstance(p, str))
    assert info["multi_turn_items"] == multi > 0
    lv = res["levels"][0]
    assert lv["failed"] == 0 and lv["requests"] == 80 + multi  # a second turn is a request of its own
    sent = _posts(events)
    assert len(sent) == 80 + multi
    firsts = {b["messages"][0]["content"] for b in sent}
    builtin_firsts = {p if isinstance(p, str) else p[0] for prompts in BUILTIN.values() for p in prompts}
    assert firsts == builtin_firsts
    lines = _lines(records)
    assert len(lines) == lv["requests"]
    assert {line["category"] for line in lines} == set(BUILTIN)
    assert all(line["ok"] and line["prompt_tokens"] and line["output_tokens"] == 32 for line in lines)
    assert sorted(line["turn"] for line in lines).count(1) == multi
    assert res["request_records"] == str(records)
    per_category = lv["categories"]
    assert sorted(per_category) == sorted(BUILTIN)
    assert sum(c["requests"] for c in per_category.values()) == lv["requests"]
    assert all(c["accept_length"] is None for c in per_category.values())  # this server sends no spec details


def test_second_turn_carries_the_models_first_answer(server, tmp_path):
    events = tmp_path / "events.jsonl"
    data = tmp_path / "two_turns.jsonl"
    data.write_text(json.dumps({"turns": ["first question here", "and a follow-up"], "category": "chat"}) + "\n")
    s = server("--rate", "0", "--ttft", "0", "--events", str(events))
    res = run_benchmark(params(s.url, api="chat", levels=[1], requests_per_level=1, warmup_requests=0,
                               output_len=5, workload={"source": "file", "path": str(data)}))
    assert res["levels"][0]["requests"] == 2 and res["levels"][0]["failed"] == 0
    one, two = _posts(events)
    assert one["messages"] == [{"role": "user", "content": "first question here"}]
    # The test server answers " w0 w1 w2 w3 w4" to a 5-token request.
    assert two["messages"] == [{"role": "user", "content": "first question here"},
                               {"role": "assistant", "content": " w0 w1 w2 w3 w4"},
                               {"role": "user", "content": "and a follow-up"}]


def test_jsonl_file_with_dataset_lengths_seed_and_category_filter(server, tmp_path):
    events = tmp_path / "events.jsonl"
    data = tmp_path / "mine.jsonl"
    rows = [{"prompt": "question number %d about code" % i, "category": "code" if i % 2 else "chat",
             "output_len": 3 + i} for i in range(10)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = server("--rate", "0", "--ttft", "0", "--events", str(events))
    spec = {"source": "file", "path": str(data), "categories": ["code"], "sample": 3, "seed": 7,
            "output_len_mode": "dataset"}
    res = run_benchmark(params(s.url, api="completions", levels=[1], requests_per_level=3, warmup_requests=0,
                               workload=spec))
    sent = _posts(events)
    by_prompt = {r["prompt"]: r for r in rows}
    assert all(by_prompt[b["prompt"]]["category"] == "code" for b in sent)
    assert [b["max_tokens"] for b in sent] == [by_prompt[b["prompt"]]["output_len"] for b in sent]
    assert res["workload"]["categories"] == {"code": 3} and res["workload"]["seed"] == 7
    assert res["levels"][0]["counted_output_tokens"] == sum(b["max_tokens"] for b in sent)
    # The same seed gives the same requests in the same order.
    again = run_benchmark(params(s.url, api="completions", levels=[1], requests_per_level=3, warmup_requests=0,
                                 workload=spec))
    assert again["workload"] == res["workload"]
    assert [b["prompt"] for b in _posts(events)[3:]] == [b["prompt"] for b in sent]


def test_prompt_over_the_context_is_a_counted_failure_with_the_message(server, tmp_path):
    data = tmp_path / "long.jsonl"
    data.write_text(json.dumps({"prompt": "short one"}) + "\n" + json.dumps({"prompt": "word " * 50}) + "\n")
    s = server("--rate", "0", "--ttft", "0", "--context-len", "20")
    res = run_benchmark(params(s.url, api="chat", levels=[1], requests_per_level=2, warmup_requests=0,
                               workload={"source": "file", "path": str(data)}))
    lv = res["levels"][0]
    assert (lv["completed"], lv["failed"]) == (1, 1)
    assert lv["errors"] == ["HTTP 400: " + json.dumps({
        "object": "error", "type": "BadRequestError", "code": 400,
        "message": "The input (50 tokens) is longer than the model's context length (20 tokens)."})]


def test_completions_api_refuses_a_conversation_item(server):
    s = server("--rate", "0")
    with pytest.raises(InvalidInput, match=r"builtin-v1 \w+/\d+ is a conversation .* use api: chat"):
        run_benchmark(params(s.url, api="completions", workload={"source": "builtin"}))


def test_controller_file_travels_to_the_host_through_ansible(server, tmp_path):
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps({"question_id": i, "category": "math", "turns": ["q%d" % i, "again"]}) + "\n"
                            for i in range(3)))
    records = tmp_path / "records.jsonl"
    s = server("--rate", "0", "--ttft", "0")
    res = ansible_module({"base_url": s.url, "levels": [1], "requests_per_level": 3, "warmup_requests": 0,
                          "output_len": 4, "workload": {"source": "file", "path": str(data)},
                          "request_records": str(records)})
    assert res["workload"]["path"] == str(data) and res["workload"]["format"] == "mtbench"
    assert res["levels"][0]["requests"] == 6 and res["levels"][0]["failed"] == 0
    assert [line["turn"] for line in _lines(records)] == [0, 1] * 3


def test_builtin_and_multi_turn_jsonl_against_the_simulated_eagle3_sglang(sim_server, tmp_path):
    spec = sim_server("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(SIM_DRAFT),
                      "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                      "--speculative-num-draft-tokens", "4")
    records = tmp_path / "records.jsonl"
    res = run_benchmark(params(spec, api=None, levels=[4], requests_per_level=16, output_len=24,
                               workload={"source": "builtin", "sample": 24, "seed": 3},
                               request_records=str(records)))
    lv = res["levels"][0]
    assert lv["failed"] == 0 and lv["accept_length"] and 1.0 < lv["accept_length"] <= 4.0
    counted = [line for line in _lines(records) if not line["warmup"]]
    assert len(counted) == lv["requests"] >= 16
    assert all(line["category"] in BUILTIN and line["prompt_tokens"] > 0 for line in counted)
    # Acceptance per category from the simulator's per-request spec_tokens_details, recomputed
    # from the records: the category's output tokens over its verify steps.
    for category, figures in lv["categories"].items():
        mine = [line for line in counted if line["category"] == category]
        expected = sum(line["output_tokens"] for line in mine) / float(sum(line["spec_verify_ct"] for line in mine))
        assert figures["accept_length"] == round(expected, 3) and 1.0 < expected <= 4.0

    data = tmp_path / "chat.jsonl"
    data.write_text("".join(json.dumps({"turns": ["Tell me about rivers number %d." % i, "Shorter, please."],
                                        "category": "chat"}) + "\n" for i in range(4)))
    res = run_benchmark(params(spec, api=None, levels=[2], requests_per_level=4, warmup_requests=0, output_len=24,
                               workload={"source": "file", "path": str(data), "format": "jsonl"},
                               request_records=str(records)))
    assert res["levels"][0]["failed"] == 0 and res["levels"][0]["requests"] == 8
    turns = {}
    for line in _lines(records):
        turns.setdefault(line["item"], {})[line["turn"]] = line
    for item, pair in turns.items():
        # The second turn's prompt holds the first turn's prompt and the model's 24-token answer.
        assert pair[1]["prompt_tokens"] > pair[0]["prompt_tokens"] + 10, (item, pair)


def test_missing_controller_file_fails_before_any_request(server, tmp_path):
    events = tmp_path / "events.jsonl"
    s = server("--rate", "0", "--events", str(events))
    missing = tmp_path / "absent.jsonl"
    args = {"base_url": s.url, "levels": [1], "workload": {"source": "file", "path": str(missing)}}
    cmd = [os.path.join(paths.VENV_BIN, "ansible"), "localhost", "-m", "gpufleet.serving.llm_benchmark",
           "-a", json.dumps(args), "-e", "ansible_python_interpreter=%s" % PY]
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="minimal", ANSIBLE_NOCOLOR="1")
    out = subprocess.run(cmd, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode != 0
    assert ("workload %s: file not found on the controller" % missing) in out.stdout
    assert "workload.location: host" in out.stdout
    assert not events.exists() or not _posts(events)


def test_check_mode_sends_the_load_but_writes_no_records(server, tmp_path):
    records = tmp_path / "records.jsonl"
    s = server("--rate", "0", "--ttft", "0")
    res = benchmark(params(s.url, api=None, levels=[1], requests_per_level=2, warmup_requests=0,
                           workload={"source": "builtin", "sample": 2}, request_records=str(records)), check_mode=True)
    assert res["levels"][0]["completed"] == 2 and not records.exists() and "request_records" not in res


# The simulated EAGLE-3 servers' draft: the sglang servers' --speculative-num-draft-tokens 4,
# vLLM's num_speculative_tokens 3 plus the bonus token; both at the default accept length.
SIM_DRAFT_TOKENS = 4
SIM_ACCEPT = 2.6


# Three categories whose texts the simulators' acceptance model scores apart: plain prose
# (nothing to predict), code (symbols) and a number table (digits and repeated rows).
CATEGORY_TEXTS = {
    "prose": ["Walk along the river at dusk and tell me what the herons are doing there, item %d.",
              "Describe a quiet morning market where farmers sell apples and bread, story %d."],
    "code": ["def total(xs):\n    return sum(x * %d for x in xs if x > 0)  # {[()]} == != <= >=",
             "for (i = 0; i < %d; i++) { buf[i] = (a[i] + b[i]) >> 1; } /* [i]++; */"],
    "table": ["| %d | 10 | 20 | 30 |\n| 1 | 10 | 20 | 30 |\n| 2 | 10 | 20 | 30 |\n| 3 | 10 | 20 | 30 |",
              "%d, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115"],
}


def _category_file(tmp_path):
    path = tmp_path / "categories.jsonl"
    lines = [json.dumps({"prompt": text % i, "category": category})
             for category, texts in CATEGORY_TEXTS.items() for i in range(4) for text in texts]
    path.write_text("\n".join(lines) + "\n")
    return path


def _expected_steps(text, tokens):
    """Expected verify steps of a request of TOKENS output tokens continuing TEXT, in the
    simulators' model (sim/pypath/_simcore/text.py): a step yields 1 + Binomial(D-1, p)
    tokens, the last one cut at max_tokens. steps(t) = 1 + sum_k P(k) steps(t - k), 0 for t <= 0."""
    p = sim_text.accept_probability(SIM_ACCEPT, SIM_DRAFT_TOKENS, sim_text.predictability(text))
    d = SIM_DRAFT_TOKENS - 1
    yields = [(1 + j, math.comb(d, j) * p ** j * (1 - p) ** (d - j)) for j in range(d + 1)]
    steps = [0.0] * (tokens + 1)
    for t in range(1, tokens + 1):
        steps[t] = 1.0 + sum(chance * steps[max(t - k, 0)] for k, chance in yields)
    return steps[tokens]


def _truth(spec, requests, warmup, category, tokens):
    """The simulators' expected acceptance over CATEGORY's pass: its tokens over the expected
    verify steps of every request it sends (the counters see the warm-up too)."""
    items = load_workload(spec, 0).of_category(category).items_for(requests, warmup)
    steps = sum(_expected_steps("\n".join(m["content"] for m in item.messages), tokens) for item in items)
    return len(items) * tokens / steps


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_category_passes_measure_tok_s_and_acceptance_per_category(engine, sim_server, request, tmp_path):
    """One pass per category at the level: tok/s per category matches the server's own counter
    over that pass, and acceptance per category matches the simulators' documented text model;
    SGLang's per-request figure and its counters around the pass agree with each other, and
    vLLM (no per-request acceptance) takes it from the counters around the pass."""
    if engine == "sglang":
        url = sim_server(*EAGLE3)
    else:
        server = VllmServer(tmp_path, None, "--speculative-config", json.dumps(
            {"method": "eagle3", "model": str(SIM_DRAFT), "num_speculative_tokens": SIM_DRAFT_TOKENS - 1}))
        request.addfinalizer(server.stop)  # kills exactly the session it started
        url = server.wait_ready().url
    spec = {"source": "file", "path": str(_category_file(tmp_path)), "format": "jsonl"}
    res = run_benchmark(params(url, api=None, levels=[8], requests_per_level=16, warmup_requests=8, output_len=48,
                               workload=spec, category_passes=True))
    lv = res["levels"][0]
    assert lv["failed"] == 0 and sorted(lv["categories"]) == sorted(CATEGORY_TEXTS)
    for category, fig in lv["categories"].items():
        alone = fig["own_pass"]
        assert alone["failed"] == 0 and alone["requests"] == 16 and fig["output_tok_s_source"] == "pass"
        assert fig["output_tok_s"] == alone["output_tok_s"] > 0
        assert alone["server_tok_s"] == pytest.approx(alone["level_output_tokens"] / alone["level_span_s"], rel=0.01)
        assert alone["server_ratio"] == pytest.approx(1.0, abs=0.01), (category, alone)
        truth = _truth(spec, 16, 8, category, 48)
        assert alone["accept_length"] == pytest.approx(truth, rel=0.03), (category, alone["accept_length"], truth)
        if engine == "sglang":
            assert fig["accept_source"] == "request"
            assert alone["request_accept_length"] == pytest.approx(alone["accept_length"], abs=0.01)
        else:
            assert fig["accept_source"] == "pass_metrics" and fig["accept_length"] == alone["accept_length"]
            assert alone["request_accept_length"] is None
    figs = lv["categories"]
    assert figs["prose"]["accept_length"] < figs["code"]["accept_length"] < figs["table"]["accept_length"]
    assert figs["prose"]["output_tok_s"] < figs["table"]["output_tok_s"]


def test_category_passes_need_categories(server):
    with pytest.raises(InvalidInput, match="category_passes: the workload has no categories .random prompts."):
        run_benchmark(params(server(), category_passes=True))
