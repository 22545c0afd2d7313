# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Merge per-host llm_benchmark results into one baseline/candidate report.

Accepted shapes of `results` (R is an llm_benchmark result, as registered):
  {host: {"baseline": R, "candidate": R}}   either side may be missing
  {host: [R_baseline, R_candidate]}         or a one-item list (baseline only)
  [{"host": h, "baseline": R, "candidate": R}, ...]
A failed or skipped R (no `levels`) is left out with a note.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.repeats import significant
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.topology import line as topology_line

SIDES = ("baseline", "candidate")


def normalise(results):
    """({host: {"baseline": levels|None, "candidate": levels|None, "workload": {side: info|None}, and "topology" where
    the entry has one}}, notes)."""
    notes = []
    if isinstance(results, list):
        pairs = {}
        for item in results:
            if not isinstance(item, dict) or "host" not in item:
                raise InvalidInput("each item of a results list needs a 'host' key")
            pairs[str(item["host"])] = item
    elif isinstance(results, dict):
        pairs = results
    else:
        raise InvalidInput("results must be a dict host -> {baseline, candidate} or a list")
    out = {}
    for host in sorted(pairs, key=str):
        entry = pairs[host]
        if isinstance(entry, (list, tuple)):
            if not 1 <= len(entry) <= 2:
                raise InvalidInput("results for %s: a list must hold [baseline] or [baseline, candidate]" % host)
            entry = dict(zip(SIDES, entry))
        if not isinstance(entry, dict):
            raise InvalidInput("results for %s must be a dict with baseline/candidate" % host)
        out[str(host)] = {"workload": {}}
        # The server's shape (docs/multinode.md): its nodes, nnodes and TP/PP/DP/EP sizes; across hosts, measured at rank 0.
        if isinstance(entry.get("topology"), dict):
            out[str(host)]["topology"] = entry["topology"]
        for side in SIDES:
            out[str(host)][side] = _levels(entry.get(side), host, side, notes)
            out[str(host)]["workload"][side] = wl.describe(entry.get(side))
    return out, notes


def _levels(result, host, side, notes):
    if result is None:
        return None
    if isinstance(result, list):  # a bare levels list
        return result
    if not isinstance(result, dict):
        raise InvalidInput("results for %s %s: expected an llm_benchmark result" % (host, side))
    if result.get("failed") or result.get("skipped") or not isinstance(result.get("levels"), list):
        why = result.get("msg") or ("skipped" if result.get("skipped") else "no levels")
        notes.append("%s %s: no result (%s)" % (host, side, why))
        return None
    return result["levels"]


def _ttft(lv, key, figure="ttft_ms"):
    t = (lv or {}).get(figure) or {}
    return t.get(key)


def level_key(row):
    """Closed-loop levels by concurrency first, then open-loop levels by request rate."""
    return (row.get("request_rate") or 0.0, row["concurrency"])


def level_name(key):
    rate, conc = key
    if rate:
        return "%g req/s (max %s)" % (rate, conc)
    return "%d" % conc


def side_summary(levels):
    """Compact per-level rows and the headline figures of one host's one side."""
    rows = []
    for lv in levels:
        row = {
            "concurrency": lv["concurrency"],
            "request_rate": lv.get("request_rate"),
            "output_tok_s": lv.get("output_tok_s"),
            "requests_per_s": lv.get("requests_per_s"),
            "goodput_req_s": lv.get("goodput_req_s"),
            "server_tok_s": lv.get("server_tok_s"),
            "server_ratio": lv.get("server_ratio"),
            "itl_estimated": lv.get("itl_estimated"),
            "accept_length": lv.get("accept_length"),
            # GPU telemetry (llm_benchmark's telemetry option): tokens per joule and throttling.
            "output_tokens_per_joule": lv.get("output_tokens_per_joule"),
            "throttled": lv.get("throttled"),
            "throttle_reasons": lv.get("throttle_reasons"),
            "completed": lv.get("completed"),
            "failed": lv.get("failed", 0),
            # With repeats: the 95% intervals of output tok/s, TTFT p50 and acceptance length.
            "intervals": {k: v for k, v in (lv.get("repeats") or {}).items()
                          if k in ("output_tok_s", "ttft_p50_ms", "accept_length")} or None,
        }
        for figure, name in (("ttft_ms", "ttft"), ("tpot_ms", "tpot"), ("itl_ms", "itl"), ("latency_ms", "e2e")):
            for q in ("p50", "p99"):
                row["%s_%s_ms" % (name, q)] = _ttft(lv, q, figure)
        if lv.get("completed") == 0:
            # Nothing completed: no figure was measured (older results wrote 0.0), so none is plotted.
            row["all_failed"] = True
            for key in row:
                if key.endswith(("_tok_s", "_req_s", "_ms", "requests_per_s")) and key != "server_tok_s":
                    row[key] = None
        rows.append(row)
    rows.sort(key=level_key)
    return _headline(rows)


def _headline(rows):
    with_tps = [r for r in rows if r["output_tok_s"] is not None]
    at1 = next((r for r in rows if r["concurrency"] == 1 and not r.get("request_rate")), None)
    peak = max(with_tps, key=lambda r: r["output_tok_s"]) if with_tps else None
    accepts = [r["accept_length"] for r in rows if r.get("accept_length") is not None]
    return {
        "levels": rows,
        "single_stream_tok_s": at1["output_tok_s"] if at1 else None,
        "peak_tok_s": peak["output_tok_s"] if peak else None,
        "peak_concurrency": peak["concurrency"] if peak else None,
        "ttft_at_1_ms": {"p50": at1.get("ttft_p50_ms"), "p99": at1.get("ttft_p99_ms")} if at1 else None,
        "ttft_at_peak_ms": {"p50": peak.get("ttft_p50_ms"), "p99": peak.get("ttft_p99_ms")} if peak else None,
        "accept_length": round(sum(accepts) / len(accepts), 3) if accepts else None,
        "failed": sum(r.get("failed") or 0 for r in rows),
    }


def fleet_side(host_sides, notes, side):
    """Sum of tok/s over hosts at each level; TTFT is per host only (null here)."""
    present = {h: s for h, s in host_sides.items() if s is not None}
    if not present:
        return None
    by_level = {}
    for summ in present.values():
        for r in summ["levels"]:
            if r["output_tok_s"] is None:
                continue
            slot = by_level.setdefault(level_key(r), {"tok": 0.0, "hosts": 0, "accepts": []})
            slot["tok"] += r["output_tok_s"]
            slot["hosts"] += 1
            if r.get("accept_length") is not None:
                slot["accepts"].append(r["accept_length"])
    rows = []
    for key in sorted(by_level):
        slot = by_level[key]
        if slot["hosts"] < len(present):
            notes.append("fleet %s at concurrency %s sums %d of %d hosts"
                         % (side, level_name(key), slot["hosts"], len(present)))
        rows.append({
            "concurrency": key[1],
            "request_rate": key[0] or None,
            "output_tok_s": round(slot["tok"], 3),
            "hosts": slot["hosts"],
            "ttft_p50_ms": None,
            "ttft_p99_ms": None,
            "accept_length": round(sum(slot["accepts"]) / len(slot["accepts"]), 3) if slot["accepts"] else None,
            "failed": sum(next((r.get("failed") or 0 for r in s["levels"] if level_key(r) == key), 0)
                          for s in present.values()),
        })
    out = _headline(rows)
    out["ttft_at_1_ms"] = out["ttft_at_peak_ms"] = None
    out["hosts"] = len(present)
    return out


def ratios(baseline, candidate):
    """candidate/baseline tok/s per level present on both sides."""
    if baseline is None or candidate is None:
        return []
    rows = {level_key(r): r for r in candidate["levels"]}
    cand = {k: r["output_tok_s"] for k, r in rows.items()}
    out = []
    for r in baseline["levels"]:
        c, b = level_key(r), r["output_tok_s"]
        if c in cand and cand[c] is not None and b:
            ci_b = (r.get("intervals") or {}).get("output_tok_s")
            ci_c = (rows[c].get("intervals") or {}).get("output_tok_s")
            out.append({"concurrency": c[1], "request_rate": c[0] or None, "baseline_tok_s": b,
                        "candidate_tok_s": cand[c], "ratio": round(cand[c] / b, 3),
                        "baseline_ci": ci_b, "candidate_ci": ci_c, "significant": significant(ci_b, ci_c)})
    return out


def merge(results, title="LLM serving benchmark", baseline_label="baseline", candidate_label="candidate"):
    """The report dict: per host and fleet, both sides, ratios, notes."""
    hosts_levels, notes = normalise(results)
    if not hosts_levels:
        raise InvalidInput("results is empty")
    hosts = {}
    for host, sides in hosts_levels.items():
        entry = {side: (side_summary(sides[side]) if sides[side] is not None else None) for side in SIDES}
        entry["ratio"] = ratios(entry["baseline"], entry["candidate"])
        entry["workload"] = sides["workload"]
        entry["categories"] = wl.categories(
            [(side, sides[side]) for side in SIDES], "baseline")
        if sides.get("topology"):
            entry["topology"] = sides["topology"]
            notes.append("%s: %s" % (host, topology_line(sides["topology"])))
        hosts[host] = entry
    fleet = {side: fleet_side({h: e[side] for h, e in hosts.items()}, notes, side) for side in SIDES}
    fleet["ratio"] = ratios(fleet["baseline"], fleet["candidate"])
    return {
        "title": title,
        "labels": {"baseline": baseline_label, "candidate": candidate_label},
        "hosts": hosts,
        "fleet": fleet,
        "notes": notes,
    }
