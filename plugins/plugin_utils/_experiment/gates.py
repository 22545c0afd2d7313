# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An experiment's gates: which exist, what each limit must look like, and pass or fail.

Every figure comes from the variant's llm_benchmark result (record["bench"]) read by
_report/merge.side_summary, so a gate means what the report's tables show:
  min_acceptance_length  the mean acceptance length over the levels (side_summary accept_length)
  min_speedup            output tok/s at each listed concurrency / the reference variant's at the same
                         concurrency (closed-loop levels); every level listed must pass
  max_ttft_p99_ms        the highest TTFT p99 of any level
  max_tpot_p99_ms        the highest TPOT p99 of any level
  max_failed_requests    failed counted requests, all levels together
  min_goodput_fraction   the lowest, over the levels, share of counted requests that met every goodput
                         SLO the benchmark gave (slo_ttft_ms, slo_tpot_ms, slo_e2e_ms)
  per_category           per workload category, min_acceptance_length (pooled over the levels, as the
                         report's category table), max_ttft_p99_ms and max_tpot_p99_ms (the highest of
                         the category's p99 at any level); each entry named per_category.CATEGORY.GATE
  throttled              false: no level may have run on throttled GPUs (levels[].throttled)
  min_tokens_per_joule   the lowest output tokens per joule of any level (levels[].output_tokens_per_joule)
throttled and min_tokens_per_joule need llm_benchmark's GPU telemetry (docs/telemetry.md): without it the figure is missing.
A figure that is missing fails its gate and says why, except the acceptance length of a variant
without speculative settings, which is not applicable (passes). A level where nothing completed
has no figure: a gate on TTFT, TPOT or acceptance fails there, never takes the maximum or the
mean of the other levels.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.merge import side_summary
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.workload import pooled_accept

# Each gate's figure, as the report defines it (docs/playbooks.md shows this table, generated).
GATE_DOCS = {
    "min_acceptance_length": "the mean acceptance length over the levels, at least this (not applicable to a "
                             "variant without speculative settings; a level where nothing completed fails it)",
    "min_speedup": "output tok/s divided by the reference's at the same concurrency, at least this: a number "
                   "(every level both ran) or {value: X, levels: [C, ...]}",
    "max_ttft_p99_ms": "the highest TTFT p99 of any level, in ms, at most this (a level where nothing completed "
                       "fails it)",
    "max_tpot_p99_ms": "the highest TPOT p99 of any level, in ms, at most this (a level where nothing completed "
                       "fails it)",
    "max_failed_requests": "failed counted requests, all levels and all their repeats together, at most this",
    "throttled": "false: no level may have run on a throttled GPU (a thermal, power-brake or hardware slowdown "
                 "reason, or an SM clock below 75% of default; llm_benchmark's telemetry), and a level without "
                 "telemetry fails it; true: not checked",
    "min_tokens_per_joule": "the lowest output tokens per joule of any level (llm_benchmark's telemetry), at "
                            "least this (a level without the figure fails it)",
    "min_goodput_fraction": "the share of counted requests that met every goodput SLO of the benchmark "
                            "(slo_ttft_ms, slo_tpot_ms, slo_e2e_ms), at every level (all repeats together), at "
                            "least this, from 0 to 1 (fails when the benchmark gave no SLO)",
    "per_category": "gates per workload category, {CATEGORY: {GATE: LIMIT}} with GATE one of "
                    "min_acceptance_length (the category's, pooled over the levels), max_ttft_p99_ms and "
                    "max_tpot_p99_ms (the category's highest p99 of any level); a category without a request "
                    "fails its gates",
}
CATEGORY_GATES = ("min_acceptance_length", "max_ttft_p99_ms", "max_tpot_p99_ms")
GATE_NAMES = tuple(GATE_DOCS)
SPEEDUP_KEYS = ("value", "levels")


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def problems(gates):
    """[(key path below gates, what to change)] for a gates mapping; unknown names are the caller's."""
    out = []
    for name, limit in gates.items():
        if name not in GATE_NAMES:
            continue
        if name == "min_speedup":
            out += _speedup_problems(limit)
        elif name == "throttled":
            if not isinstance(limit, bool):
                out.append(((name,), "must be true or false (false: no level may be throttled), not %r" % (limit,)))
        elif name == "per_category":
            out += _category_problems(limit)
        elif name == "max_failed_requests":
            if not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0):
                out.append(((name,), "must be a whole number of requests, 0 or more, not %r" % (limit,)))
        elif name == "min_goodput_fraction":
            if not (_number(limit) and 0 <= limit <= 1):
                out.append(((name,), "must be a number from 0 to 1 (a share of the requests), not %r" % (limit,)))
        elif not (_number(limit) and limit >= 0):
            out.append(((name,), "must be a number, 0 or more, not %r" % (limit,)))
    return out


def _category_problems(limit):
    if not isinstance(limit, dict) or not limit:
        return [(("per_category",), "must be a mapping {CATEGORY: {GATE: LIMIT}}, not %r" % (limit,))]
    out = []
    for category, gates in limit.items():
        if not isinstance(gates, dict) or not gates:
            out.append((("per_category", category), "must be a mapping of gates (%s), not %r"
                        % (", ".join(CATEGORY_GATES), gates)))
            continue
        for gate, value in gates.items():
            if gate not in CATEGORY_GATES:
                out.append((("per_category", category, gate), "unknown per-category gate; the per-category gates: %s"
                            % ", ".join(CATEGORY_GATES)))
            elif not (_number(value) and value >= 0):
                out.append((("per_category", category, gate), "must be a number, 0 or more, not %r" % (value,)))
    return out


def _speedup_problems(limit):
    if _number(limit):
        return []
    if not isinstance(limit, dict):
        return [(("min_speedup",), "must be a number or {value: X, levels: [CONCURRENCY, ...]}, not %r" % (limit,))]
    out = [(("min_speedup", k), "unknown key; the keys: %s" % ", ".join(SPEEDUP_KEYS))
           for k in limit if k not in SPEEDUP_KEYS]
    if not _number(limit.get("value")):
        out.append((("min_speedup", "value"), "must be a number (the least ratio of output tok/s to the reference's)"))
    levels = limit.get("levels")
    if levels is not None and not (isinstance(levels, list) and levels
                                   and all(isinstance(c, int) and not isinstance(c, bool) for c in levels)):
        out.append((("min_speedup", "levels"), "must be a non-empty list of concurrency levels (whole numbers)"))
    return out


def speedup_levels(limit):
    """The concurrency levels a min_speedup limit names (None: every level both sides ran)."""
    return limit.get("levels") if isinstance(limit, dict) else None


def _levels(record):
    bench = (record or {}).get("bench")
    if (record or {}).get("outcome", "ok") != "ok" or not isinstance(bench, dict) \
            or not isinstance(bench.get("levels"), list):
        return None
    return side_summary(bench["levels"])


def _closed(summary):
    return {r["concurrency"]: r for r in summary["levels"] if not r.get("request_rate")}


def _entry(gate, limit, value, passed, detail, level=None):
    return {"gate": gate, "level": level, "limit": limit,
            "value": shown(value, limit) if _number(value) else value, "passed": bool(passed), "detail": detail}


def shown(value, limit, digits=3, most=9):
    """VALUE rounded to DIGITS decimals, or to more (up to MOST) where fewer would read as LIMIT
    or as a round number it is not: a speed-up of 682.376/682.502 is 0.9998, never "1", so
    a gate that failed by a hair does not show the limit it missed."""
    value = float(value)
    for d in range(digits, most + 1):
        out = round(value, d)
        if out != value and _number(limit) and out == float(limit):
            continue
        if out == round(out) and out != value:
            continue
        return out
    return value


def _nothing_completed(summary, gate, limit, what):
    """The failing entry of a gate on WHAT when a level completed nothing, or None."""
    empty = next((r for r in summary["levels"] if r.get("all_failed")), None)
    if empty is None:
        return None
    return _entry(gate, limit, None, False, "nothing completed at concurrency %s (%s failed), so no %s there"
                  % (empty["concurrency"], empty.get("failed"), what))


def _worst(summary, key, gate, limit, what):
    empty = _nothing_completed(summary, gate, limit, what)
    if empty:
        return empty
    rows = [r for r in summary["levels"] if r.get(key) is not None]
    if not rows:
        return _entry(gate, limit, None, False, "no %s figure in the benchmark result" % what)
    worst = max(rows, key=lambda r: r[key])
    return _entry(gate, limit, worst[key], worst[key] <= limit,
                  "highest %s at concurrency %s" % (what, worst["concurrency"]))


def _throttled(summary, limit):
    """throttled: false passes when every level measured its GPUs and none was throttled."""
    if limit:
        return _entry("throttled", limit, None, True, "not checked: throttled GPUs are allowed")
    for r in summary["levels"]:
        if r.get("throttled") is None:
            return _entry("throttled", limit, None, False, "no GPU telemetry at concurrency %s (llm_benchmark's "
                          "telemetry option; docs/telemetry.md)" % r["concurrency"], r["concurrency"])
        if r["throttled"]:
            return _entry("throttled", limit, True, False, "GPUs throttled at concurrency %s: %s"
                          % (r["concurrency"], ", ".join(r.get("throttle_reasons") or [])), r["concurrency"])
    return _entry("throttled", limit, False, True, "no level throttled")


def _least_tokens_per_joule(summary, limit):
    gate = "min_tokens_per_joule"
    empty = _nothing_completed(summary, gate, limit, "tokens per joule")
    if empty:
        return empty
    missing = next((r for r in summary["levels"] if r.get("output_tokens_per_joule") is None), None)
    if missing is not None or not summary["levels"]:
        return _entry(gate, limit, None, False, "no tokens per joule at concurrency %s (llm_benchmark's telemetry "
                      "option; docs/telemetry.md)" % (missing or {}).get("concurrency"))
    least = min(summary["levels"], key=lambda r: r["output_tokens_per_joule"])
    return _entry(gate, limit, least["output_tokens_per_joule"], least["output_tokens_per_joule"] >= limit,
                  "lowest tokens per joule at concurrency %s" % least["concurrency"])


def _speedup(summary, ref_summary, limit, reference_name):
    value = limit if _number(limit) else limit["value"]
    if ref_summary is None:
        return [_entry("min_speedup", value, None, False, "no benchmark result of the reference %s" % reference_name)]
    mine, ref = _closed(summary), _closed(ref_summary)
    levels = speedup_levels(limit) or sorted(set(mine) & set(ref))
    out = []
    for conc in levels:
        tok, ref_tok = (mine.get(conc) or {}).get("output_tok_s"), (ref.get(conc) or {}).get("output_tok_s")
        if tok is None or not ref_tok:
            missing = "this variant" if tok is None else "the reference %s" % reference_name
            out.append(_entry("min_speedup", value, None, False,
                              "no output tok/s of %s at concurrency %s" % (missing, conc), conc))
            continue
        ratio = float(tok) / float(ref_tok)
        out.append(_entry("min_speedup", value, ratio, ratio >= value,
                          "output tok/s at concurrency %s: %s vs %s's %s" % (conc, tok, reference_name, ref_tok),
                          conc))
    return out or [_entry("min_speedup", value, None, False, "no concurrency level measured on both sides")]


def _per_category(record, limits):
    """per_category: each category's gates on its figures over the levels (llm_benchmark's levels[].categories)."""
    levels = [lv for lv in record["bench"]["levels"] if isinstance(lv, dict)]
    out = []
    for category, gates in limits.items():
        figs = [(lv.get("concurrency"), lv["categories"][category]) for lv in levels
                if category in (lv.get("categories") or {})]
        for gate, limit in gates.items():
            name = "per_category.%s.%s" % (category, gate)
            if not figs:
                out.append(_entry(name, limit, None, False, "no request of category %s in the benchmark result"
                                  % category))
            elif gate == "min_acceptance_length":
                if not record.get("speculative"):
                    out.append(_entry(name, limit, None, True, "not applicable: the variant has no speculative settings"))
                    continue
                value = pooled_accept(levels, category)
                out.append(_entry(name, limit, value, value is not None and value >= limit,
                                  "category %s's acceptance length, pooled over the levels" % category
                                  if value is not None else "no acceptance length of category %s" % category))
            else:
                key = "ttft_ms" if gate == "max_ttft_p99_ms" else "tpot_ms"
                rows = [(conc, (fig.get(key) or {}).get("p99")) for conc, fig in figs]
                rows = [(conc, v) for conc, v in rows if v is not None]
                if not rows:
                    out.append(_entry(name, limit, None, False, "no %s p99 of category %s" % (key[:4].upper(), category)))
                    continue
                conc, worst = max(rows, key=lambda row: row[1])
                out.append(_entry(name, limit, worst, worst <= limit, "category %s's highest %s p99 at concurrency %s"
                                  % (category, key[:4].upper(), conc)))
    return out


def _goodput(record, limit):
    """min_goodput_fraction: the level whose share of counted requests within the SLOs is lowest."""
    levels = record["bench"]["levels"]
    if all(lv.get("goodput_requests") is None for lv in levels):
        return _entry("min_goodput_fraction", limit, None, False,
                      "no goodput: the benchmark gave no SLO (benchmark: slo_ttft_ms, slo_tpot_ms or slo_e2e_ms)")
    rows = [(float(lv.get("goodput_requests") or 0) / lv["requests"], lv) for lv in levels if lv.get("requests")]
    if not rows:
        return _entry("min_goodput_fraction", limit, None, False, "no counted request in the benchmark result")
    share, worst = min(rows, key=lambda row: row[0])
    return _entry("min_goodput_fraction", limit, share, share >= limit,
                  "lowest share within the SLOs at concurrency %s: %s of %s requests"
                  % (worst.get("concurrency"), worst.get("goodput_requests") or 0, worst["requests"]),
                  worst.get("concurrency"))


def evaluate(variant_record, reference_record, gates, reference_name="the reference"):
    """[{gate, level, limit, value, passed, detail}] for each gate of GATES, in GATE_NAMES order."""
    summary = _levels(variant_record)
    out = []
    for gate in (g for g in GATE_NAMES if g in (gates or {})):
        limit = gates[gate]
        if gate == "min_acceptance_length" and not (variant_record or {}).get("speculative"):
            out.append(_entry(gate, limit, None, True, "not applicable: the variant has no speculative settings"))
        elif summary is None:
            outcome = (variant_record or {}).get("outcome") or "no record"
            out.append(_entry(gate, limit.get("value") if isinstance(limit, dict) else limit, None, False,
                              "no benchmark result (%s)" % outcome))
        elif gate == "min_acceptance_length" and _nothing_completed(summary, gate, limit, "acceptance length"):
            out.append(_nothing_completed(summary, gate, limit, "acceptance length"))
        elif gate == "min_acceptance_length":
            value = summary["accept_length"]
            out.append(_entry(gate, limit, value, value is not None and value >= limit,
                              "mean acceptance length over the levels" if value is not None
                              else "no acceptance length in the benchmark result (the server reported none)"))
        elif gate == "min_speedup":
            out += _speedup(summary, _levels(reference_record), limit, reference_name)
        elif gate == "max_ttft_p99_ms":
            out.append(_worst(summary, "ttft_p99_ms", gate, limit, "TTFT p99"))
        elif gate == "max_tpot_p99_ms":
            out.append(_worst(summary, "tpot_p99_ms", gate, limit, "TPOT p99"))
        elif gate == "throttled":
            out.append(_throttled(summary, limit))
        elif gate == "min_tokens_per_joule":
            out.append(_least_tokens_per_joule(summary, limit))
        elif gate == "min_goodput_fraction":
            out.append(_goodput(variant_record, limit))
        elif gate == "per_category":
            out += _per_category(variant_record, limit)
        else:
            out.append(_entry(gate, limit, summary["failed"], summary["failed"] <= limit,
                              "failed counted requests, all levels"))
    return out


def entry_text(entry):
    """'GATE[ at concurrency C] value V, limit L (DETAIL)'."""
    gate = entry["gate"] + (" at concurrency %s" % entry["level"] if entry.get("level") is not None else "")
    value = "none" if entry["value"] is None else entry["value"]
    return "%s value %s, limit %s (%s)" % (gate, value, entry["limit"], entry["detail"])


def failure_text(host, variant, entry):
    """'HOST VARIANT: GATE value V, limit L' (the gate with its level where it has one)."""
    return "%s %s: %s" % (host, variant, entry_text(entry))
