# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A level's counted requests grouped by their workload category.

Latencies are per request, so they split by category exactly. Throughput does not:
the categories share the server inside one level, so tok/s per category is measured only
by a pass of that category alone (llm_benchmark's category_passes). Acceptance per category
comes from SGLang's per-request spec_tokens_details (tokens per verify step: the sum of
completion tokens over the sum of spec_verify_ct, the same quantity as the level's
counter-based figure); for an engine that answers none per request, from the server's
counter deltas around the category's own pass; null otherwise. Each figure names its
source: accept_source "request" (per request, in the mixed level), "pass_metrics" or
"pass_server_info" (the pass's counters, or the server's own average after it);
output_tok_s_source "pass".
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stats import percentiles


def counted_by_category(records: list, items: list, warmup: int) -> dict:
    """{category: [Record, ...]} of the counted jobs (a conversation's turns all count)."""
    out = {}
    for j in range(warmup, len(records)):
        category = items[j].category
        if category is None:
            continue
        recs = records[j] if isinstance(records[j], list) else [records[j]]
        out.setdefault(category, []).extend(r for r in recs if r is not None)
    return out


def category_metrics(records: list) -> dict:
    ok = [r for r in records if r.ok]
    ttft = [r.first - r.start for r in ok]
    latency = [r.end - r.start for r in ok]
    tpot = [(r.end - r.first) / (r.tokens - 1) for r in ok if r.tokens > 1]
    spec = [(r.tokens, r.spec.get("spec_verify_ct")) for r in ok if isinstance(r.spec, dict)]
    spec = [(t, v) for t, v in spec if v]
    accept = round(sum(t for t, v in spec) / float(sum(v for t, v in spec)), 3) if spec else None
    return {
        "requests": len(records),
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "output_tokens": sum(r.tokens for r in ok),
        "input_tokens": sum(r.prompt_tokens or 0 for r in ok),
        "ttft_ms": percentiles(ttft),
        "tpot_ms": percentiles(tpot),
        "latency_ms": percentiles(latency),
        "accept_length": accept,
        "accept_source": "request" if accept is not None else None,
        "output_tok_s": None,
        "output_tok_s_source": None,
    }


# What a category's pass keeps of its level figures (stats.level_metrics, run.server_rate).
PASS_FIGURES = ("requests", "completed", "failed", "output_tok_s", "level_output_tokens", "level_span_s",
                "server_tok_s", "server_ratio", "ttft_ms", "tpot_ms", "accept_length", "accept_source")


def with_pass(mixed: dict, alone: dict, per_request: dict | None) -> dict:
    """A category's figures MIXED (category_metrics, in the mixed level) with its own pass:
    ALONE, the pass's level figures, and PER_REQUEST, category_metrics of the pass's requests
    (None without). tok/s is the pass's; acceptance stays per request where the mixed level
    had it, else the pass's counters give it."""
    out = dict(mixed)
    own = {key: alone.get(key) for key in PASS_FIGURES}
    own["request_accept_length"] = (per_request or {}).get("accept_length")
    out["own_pass"] = own
    out["output_tok_s"], out["output_tok_s_source"] = alone.get("output_tok_s"), "pass"
    if out.get("accept_length") is None and alone.get("accept_length") is not None:
        out["accept_length"] = alone["accept_length"]
        out["accept_source"] = "pass_%s" % alone.get("accept_source")
    return out


def by_category(records: list, items: list | None, warmup: int) -> dict | None:
    """{category: its figures} for a level of a workload with categories; None otherwise."""
    if not items:
        return None
    groups = counted_by_category(records, items, warmup)
    return {c: category_metrics(recs) for c, recs in sorted(groups.items())} or None
