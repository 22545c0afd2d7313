# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark settings a fleet playbook or an experiment file may set, once: name, type, default
and documentation.

Everything else is read or generated from this table:
- llm_benchmark's options of these names (its argument spec, argument_spec(); its DOCUMENTATION,
  scripts/gen_docs.py);
- the _fleet role's `fleet_benchmark` suboptions and the docs' tables of the playbooks' and the
  experiment file's `benchmark` keys (scripts/gen_docs.py; tests/unit/test_generated_docs.py fails on drift);
- the keys the benchmark_options lookup and the experiment loader accept (plugin_utils/_experiment/schema.py).

A setting's documentation is Ansible doc markup; O() and RV() name llm_benchmark's options and return values.

No Ansible imports: the lookup (controller), the module (host) and scripts read it alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.formats import FORMATS

DEFAULT_LEVELS = [1, 2, 4, 8, 16, 32, 64, 128]


@dataclasses.dataclass(frozen=True)
class Option:
    name: str
    type: str                       # int, float, bool, str, path, list, dict
    doc: tuple                      # paragraphs
    elements: str | None = None
    choices: tuple | None = None
    default: Any = None
    required: bool = False
    suboptions: tuple = ()          # Options of a dict
    required_if: tuple = ()         # (key, value, (keys required then,)) among the suboptions


# In the order docs show them.
OPTIONS = (
    Option("levels", "list", elements="int", default=DEFAULT_LEVELS, doc=(
        "Concurrency levels, run in the order given.",
    )),
    Option("requests_per_level", "int", doc=(
        "Counted requests at each level.",
        "When not set, max(2 x level, 8) rounded up to a multiple of the level, so every level ends "
        "with full waves and its wall time is not stretched by a half-empty tail.",
        "A value set here is used as given.",
        "With O(request_rates), the level in that formula is O(max_concurrency) (1 without it).",
        "With a O(workload) this counts items; a multi-turn item sends one request per turn, so "
        "RV(levels[].requests) can be larger.",
    )),
    Option("warmup_requests", "int", doc=(
        "Requests sent at the start of each level, at the level's concurrency, and not counted. "
        "When not set, one per connection (the level's start-up burst, which also warms the server "
        "for that batch size). V(0) disables warm-up.",
    )),
    Option("input_len", "int", default=512, doc=(
        "Prompt length. With O(api=completions) the prompt is this many random token ids (exact). "
        "With O(api=chat) it is this many random common words (about one token each); the server's "
        "C(usage.prompt_tokens) is reported.",
    )),
    Option("output_len", "int", default=256, doc=(
        "C(max_tokens) of every request; C(ignore_eos) is sent so outputs reach it. Outputs that "
        "end short are counted in RV(levels[].short_outputs).",
    )),
    Option("workload", "dict", doc=(
        "What the prompts are. Without it, random prompts (O(workload.source=random)).",
    ), suboptions=(
        Option("source", "str", choices=("random", "builtin", "file"), default="random", doc=(
            "V(random) - random prompts of O(input_len) (pure throughput sweeps).",
            "V(builtin) - the collection's own natural-text set, 80 items in eight categories "
            "(chat, code, math, reasoning, summarisation, extraction to JSON, translation, creative "
            "writing), some multi-turn.",
            "V(file) - a dataset file, O(workload.path).",
        )),
        Option("path", "path", doc=(
            "The dataset file with O(workload.source=file).",
        )),
        Option("location", "str", choices=("controller", "host"), default="controller", doc=(
            "V(controller) - O(workload.path) is on the controller; the action plugin copies it to "
            "a temporary file on the host for the run and removes it afterwards.",
            "V(host) - O(workload.path) is already on the host.",
        )),
        Option("format", "str", choices=FORMATS, default="auto", doc=(
            "The file's format. V(auto) tells them apart by content (a JSON list of "
            "C(conversations) is ShareGPT; a JSONL line with C(question_id) and C(turns) is "
            "MT-Bench, with C(conversations) sglang-custom, with C(messages) and C(max_tokens) or "
            "C(tools) openai, anything else jsonl).",
            "V(sharegpt) - a JSON list of C({conversations - [{from, value}, ...]}); turn 0 is the "
            "prompt and turn 1 the reference answer, as both tools read it.",
            "V(jsonl) - one object a line with C(prompt) (text), C(messages) (chat history ending "
            "in a user turn) or C(turns) (user turns of one conversation); optional C(category), "
            "C(output_len) (or C(output_tokens)).",
            "V(mtbench) - MT-Bench's C(question.jsonl) (C(question_id), C(category), C(turns)).",
            "V(sglang-custom) - sglang.bench_serving's C(--dataset-name custom) JSONL.",
            "V(vllm-custom) - C(vllm bench serve --dataset-name custom) JSONL (C(prompt), "
            "C(output_tokens)).",
            "V(openai) - sglang.bench_serving's C(--dataset-name openai) JSONL of chat requests, "
            "sent as given; taken in file order.",
        )),
        Option("categories", "list", elements="str", doc=(
            "Keep only items of these categories (an error when none matches; the message lists the "
            "file's categories).",
        )),
        Option("sample", "int", doc=(
            "How many items to take, in the seed's order. Default all. Each level's counted "
            "requests take items from the start of the sample (wrapping round when a level needs "
            "more), its warm-up the items after them.",
        )),
        Option("seed", "int", doc=(
            "Seed of the sample and its order (default O(seed)); the same seed gives the same items "
            "in the same order, and the same order as the tools' C(--seed).",
        )),
        Option("output_len_mode", "str", choices=("fixed", "dataset"), default="fixed", doc=(
            "V(fixed) - every request asks for O(output_len) tokens.",
            "V(dataset) - the item's reference length where the dataset gives one (C(output_len) or "
            "C(output_tokens) of a JSONL line, C(max_tokens) of an openai line, the first answer of "
            "a ShareGPT or sglang-custom conversation estimated as its UTF-8 bytes / 4, since the "
            "host has no tokenizer), else O(output_len).",
        )),
    ), required_if=(("source", "file", ("path",)),)),
    Option("repeats", "int", default=1, doc=(
        "Run each level this many times, one after another, to state the run-to-run spread.",
        "With more than one, RV(levels[].output_tok_s), RV(levels[].accept_length), the request "
        "rates (RV(levels[].requests_per_s), RV(levels[].goodput_req_s)) and every latency "
        "percentile (TTFT, TPOT, ITL, E2E; each run's percentile, averaged over the runs) are the "
        "means over the runs, so a latency figure and a latency gate use every run; the counts "
        "(RV(levels[].requests), RV(levels[].completed), RV(levels[].failed), "
        "RV(levels[].goodput_requests) and the token counts) are the sums over the runs and "
        "RV(levels[].errors) holds the error samples of every run, so a failure in any run shows; "
        "every other figure of the level is the first run's, and RV(levels[].repeats) gives each "
        "run's figures and a 95% confidence interval (Student t) of output tok/s, TTFT p50 and p99, "
        "TPOT p50 and p99 and acceptance length.",
    )),
    Option("category_passes", "bool", default=False, doc=(
        "After each level (and its repeats), run one more pass per category of the level's counted "
        "requests, with only that category's items of the O(workload), at the same concurrency (or "
        "rate), request count and warm-up. The categories share the server within a level, so this "
        "is what measures tok/s per category (RV(levels[].categories)).",
        "For an engine that answers no acceptance per request (vLLM), the category's acceptance "
        "length comes from the server's counter deltas around its pass (C(accept_source) "
        "C(pass_metrics)).",
        "Each pass sends as many requests as its level again, so the run takes about one level's "
        "time more per category. The passes' requests are not written to O(request_records).",
        "Needs a O(workload) whose items have categories.",
    )),
    Option("slo_ttft_ms", "float", doc=(
        "Goodput SLO - a request counts in RV(levels[].goodput_req_s) (the reports' C(goodput "
        "req/s), an experiment's C(min_goodput_fraction) gate) only with TTFT at most this, and "
        "within every other SLO given.",
    )),
    Option("slo_tpot_ms", "float", doc=(
        "Goodput SLO on TPOT (milliseconds), as O(slo_ttft_ms).",
    )),
    Option("slo_e2e_ms", "float", doc=(
        "Goodput SLO on end-to-end latency (milliseconds), as O(slo_ttft_ms).",
    )),
)


def _spec(option: Option) -> dict:
    spec = {"type": option.type}
    if option.elements:
        spec["elements"] = option.elements
    if option.choices is not None:
        spec["choices"] = list(option.choices)
    if option.default is not None:
        spec["default"] = list(option.default) if isinstance(option.default, list) else option.default
    if option.required:
        spec["required"] = True
    if option.suboptions:
        spec["options"] = {sub.name: _spec(sub) for sub in option.suboptions}
    if option.required_if:
        spec["required_if"] = [(key, value, list(keys)) for key, value, keys in option.required_if]
    return spec


def argument_spec() -> dict:
    """llm_benchmark's argument spec of these options."""
    return {option.name: _spec(option) for option in OPTIONS}


def kinds() -> dict:
    """{name: {type, elements, choices, description}} of each option, as a playbook's or an experiment's
    `benchmark` key: no default (a key not given leaves the module's)."""
    out = {}
    for option in OPTIONS:
        kind = {"type": option.type, "description": " ".join(option.doc)}
        if option.elements:
            kind["elements"] = option.elements
        if option.choices is not None:
            kind["choices"] = list(option.choices)
        out[option.name] = kind
    return out
