# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine comparison (playbooks/compare_engines.yml): several variants per host, one report.

Input (`records`): {host: [record, ...]}, one record per variant in the order run, as
roles/_fleet/tasks/experiment_variant.yml writes them:
  {"variant": "vllm+eagle3", "outcome": "ok"|"failed"|"skipped", "stage": ..., "reason": ...,
   "bench": R (an llm_benchmark result, only when the benchmark ran),
   "server": {...} (the role's *_server_result), "teardown": {...} (the verified release),
   "engine": ENGINE, "speculative": bool (optional: without them the name says, see VARIANTS)}

Each variant's headline figures come from merge.side_summary, the fleet's from
merge.fleet_side (sum of tok/s over hosts at each level), so a figure means here what it
means in the baseline/candidate report. Ratios are against one reference variant
(`reference`, base SGLang by default), on the same host (or the fleet sum):
  single_stream = variant single-stream tok/s / reference single-stream tok/s
  peak          = variant peak tok/s / reference peak tok/s (each at its own peak level)
  tpot          = variant TPOT p50 at concurrency 1 / reference's (below 1: faster per token)
A ratio is null when either side has no figure. A fleet ratio needs both variants measured
on the same hosts (else null, with a note).
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import markdown as md
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.merge import (
    fleet_side,
    level_key,
    level_name,
    side_summary,
)

# Variant names without an engine in the record: ENGINE or ENGINE+eagle3 (compare_engines.yml's
# launch steps know exactly these). A record with its own `engine` (an experiment's) may have any name.
ENGINES = tuple(_registry.names())
VARIANTS = ENGINES + tuple(name + "+eagle3" for name in ENGINES)
OUTCOMES = ("ok", "failed", "skipped")
NO_RESULT = "NO RESULT, the host left the play before this variant (see above)"


def variant_parts(name):
    """(engine, speculative) of a variant name; InvalidInput for an unknown one."""
    if name not in VARIANTS:
        raise InvalidInput("unknown variant %r: one of %s" % (name, ", ".join(VARIANTS)))
    engine, _sep, spec = name.partition("+")
    return engine, bool(spec)


def _ratio(value, ref):
    if value is None or not ref:
        return None
    return round(float(value) / float(ref), 3)


def _at1(summary, figure):
    """FIGURE (ttft, tpot, itl) p50 at concurrency 1 of a side summary."""
    row = next((r for r in summary["levels"] if r["concurrency"] == 1 and not r.get("request_rate")), None)
    return row.get("%s_p50_ms" % figure) if row else None


def _at_peak(summary, figure):
    conc = summary.get("peak_concurrency")
    row = next((r for r in summary["levels"] if r["concurrency"] == conc and not r.get("request_rate")), None)
    return row.get("%s_p50_ms" % figure) if row else None


def figures(summary):
    """The comparison's headline figures of one side summary (None: no benchmark)."""
    if summary is None:
        return None
    return {
        "single_stream_tok_s": summary["single_stream_tok_s"],
        "peak_tok_s": summary["peak_tok_s"],
        "peak_concurrency": summary["peak_concurrency"],
        "ttft_p50_at_1_ms": _at1(summary, "ttft"),
        "ttft_p50_at_peak_ms": _at_peak(summary, "ttft"),
        "tpot_p50_at_1_ms": _at1(summary, "tpot"),
        "tpot_p50_at_peak_ms": _at_peak(summary, "tpot"),
        "itl_p50_at_1_ms": _at1(summary, "itl"),
        "accept_length": summary["accept_length"],
        "failed_requests": summary["failed"],
    }


def ratios(fig, ref):
    """The ratios of figures FIG against the reference's REF (module docstring)."""
    fig, ref = fig or {}, ref or {}
    return {
        "single_stream": _ratio(fig.get("single_stream_tok_s"), ref.get("single_stream_tok_s")),
        "peak": _ratio(fig.get("peak_tok_s"), ref.get("peak_tok_s")),
        "tpot": _ratio(fig.get("tpot_p50_at_1_ms"), ref.get("tpot_p50_at_1_ms")),
    }


def _levels(bench):
    if not isinstance(bench, dict) or bench.get("failed") or not isinstance(bench.get("levels"), list):
        return None
    return bench["levels"]


def record_parts(raw):
    """(engine, speculative) of a record: its own `engine` and `speculative` where it names an
    engine (an experiment's variants have any name), else from its variant name."""
    if "engine" not in raw:
        return variant_parts(str(raw["variant"]))
    if _registry.find(raw["engine"]) is None:
        raise InvalidInput("variant %s: unknown engine %r; known engines: %s"
                           % (raw["variant"], raw["engine"], ", ".join(ENGINES)))
    return raw["engine"], bool(raw.get("speculative"))


def _record(host, raw, notes):
    if not isinstance(raw, dict) or "variant" not in raw:
        raise InvalidInput("records for %s: each item needs a 'variant' key" % host)
    name = str(raw["variant"])
    engine, spec = record_parts(raw)
    outcome = str(raw.get("outcome") or "failed")
    if outcome not in OUTCOMES:
        raise InvalidInput("records for %s %s: outcome %r is not one of %s" % (host, name, outcome, OUTCOMES))
    levels = _levels(raw.get("bench")) if outcome == "ok" else None
    if outcome == "ok" and levels is None:
        notes.append("%s %s: no benchmark levels in an ok record" % (host, name))
        outcome = "failed"
    return {
        "variant": name, "engine": engine, "speculative": spec, "outcome": outcome,
        "stage": raw.get("stage"), "reason": raw.get("reason") or "",
        "summary": side_summary(levels) if levels is not None else None,
        "workload": wl.describe(raw.get("bench")) if levels is not None else None,
        "_levels": levels,
        # Where the acceptance lengths came from (llm_benchmark: metrics, server_info).
        "accept_sources": sorted({str(lv["accept_source"]) for lv in levels or [] if lv.get("accept_source")}),
        "server": raw.get("server") if isinstance(raw.get("server"), dict) else None,
        "teardown": raw.get("teardown") if isinstance(raw.get("teardown"), dict) else None,
    }


def normalise(records):
    """{host: {variant: record}} and the variants in the order first run."""
    if not isinstance(records, dict):
        raise InvalidInput("records must be a dict host -> list of variant records")
    hosts, order, notes = {}, [], []
    for host in sorted(records, key=str):
        items = records[host] or []
        if not isinstance(items, list):
            raise InvalidInput("records for %s must be a list of variant records" % host)
        hosts[str(host)] = {}
        for raw in items:
            rec = _record(host, raw, notes)
            if rec["variant"] in hosts[str(host)]:
                raise InvalidInput("records for %s: variant %s twice" % (host, rec["variant"]))
            hosts[str(host)][rec["variant"]] = rec
            if rec["variant"] not in order:
                order.append(rec["variant"])
    return hosts, order, notes


def _fleet(hosts, variants, reference, notes):
    out = {}
    for name in variants:
        sides = {h: v[name]["summary"] for h, v in hosts.items() if name in v and v[name]["summary"]}
        summ = fleet_side(sides, notes, name) if sides else None
        out[name] = {"hosts": sorted(sides), "summary": summ, "figures": figures(summ)}
    ref = out.get(reference)
    for name, entry in out.items():
        same = ref is not None and entry["hosts"] == ref["hosts"]
        if ref is not None and entry["summary"] and ref["summary"] and not same:
            notes.append("fleet %s: measured on %s, %s on %s: no fleet ratio"
                         % (name, ", ".join(entry["hosts"]), reference, ", ".join(ref["hosts"])))
        entry["ratio"] = ratios(entry["figures"], ref["figures"]) if same else ratios(None, None)
    return out


def compare(records, title="Engine comparison", reference=_registry.DEFAULT, variants=None, named=(),
            category_level=None):
    """The report dict: per host and variant the outcome, figures, ratios; the fleet's; notes.
    NAMED: variant names known elsewhere (an experiment's), accepted without a record.
    CATEGORY_LEVEL: the concurrency the per-category table compares (workload.categories)."""
    hosts, order, notes = normalise(records)
    if not hosts:
        raise InvalidInput("records is empty")
    variants = list(variants) if variants else order
    for name in order:
        if name not in variants:
            variants.append(name)
    for name in variants:
        if name not in order and name not in named:  # a recorded variant was checked with its record
            variant_parts(name)
    if reference not in variants:
        raise InvalidInput("reference %s is not one of the variants (%s)" % (reference, ", ".join(variants)))
    for host, by_variant in hosts.items():
        ref = by_variant.get(reference)
        ref_fig = figures(ref["summary"]) if ref else None
        for rec in by_variant.values():
            rec["figures"] = figures(rec["summary"])
            rec["ratio"] = ratios(rec["figures"], ref_fig)
        if ref is None or ref["summary"] is None:
            notes.append("%s: no %s result, so no ratios" % (host, reference))
    categories = {}
    for host, by_variant in hosts.items():
        named = [(name, by_variant[name].pop("_levels")) for name in variants if name in by_variant]
        categories[host] = wl.categories(named, reference, level=category_level)
    return {
        "title": title,
        "reference": reference,
        "variants": variants,
        "hosts": hosts,
        "fleet": _fleet(hosts, variants, reference, notes),
        "categories": categories,
        "failures": failures(hosts, variants),
        "notes": notes,
    }


def failures(hosts, variants=()):
    """'HOST VARIANT: OUTCOME at STAGE: REASON' for each variant that is not ok, in the order
    of VARIANTS; a variant of VARIANTS with no record on a host has NO RESULT (the host left
    the play before it)."""
    out = []
    for host in sorted(hosts):
        names = list(variants) + [n for n in hosts[host] if n not in variants]
        for name in names:
            rec = hosts[host].get(name)
            if rec is None:
                out.append("%s %s: %s" % (host, name, NO_RESULT))
            elif rec["outcome"] != "ok":
                out.append(_not_ok_line(host, rec))
    return out


def _not_ok_line(host, rec):
    return "%s %s: %s at stage %s: %s" % (host, rec["variant"], rec["outcome"].upper(), rec.get("stage") or "?",
                                          rec["reason"])


# ---- lines and Markdown ------------------------------------------------------


def _x(value):
    return md.DASH if value is None else "%.2fx" % value


def _gpus_free(rec):
    td = rec.get("teardown") or {}
    if td.get("gpus_selected") is None:
        return md.DASH
    return "%s/%s" % (td.get("gpus_free"), td.get("gpus_selected"))


def _workload_lines(report):
    named = []
    for host in sorted(report["hosts"]):
        for name in report["variants"]:
            rec = report["hosts"][host].get(name)
            if rec is not None and rec.get("workload") is not None:
                named.append(("%s %s" % (md_text(host), md_text(name)),
                              dict(rec["workload"], accept_length=(rec.get("figures") or {}).get("accept_length"))))
    return ["## Workload", ""] + wl.workload_lines(named) + [""] if named else []


def category_warning_lines(report):
    """'HOST: WARNING: ...' for each per-category warning (workload.category_warnings), for the
    play's closing output; the report shows the same above each host's category table."""
    return ["%s: %s" % (host, w) for host in sorted(report.get("categories") or {})
            for w in (report["categories"][host] or {}).get("warnings") or []]


def host_lines(report):
    """One line per host and variant, in the order run, for the playbook's closing output."""
    out = []
    for host in sorted(report["hosts"]):
        for name in report["variants"]:
            rec = report["hosts"][host].get(name)
            if rec is None:
                out.append("%s %s: %s" % (host, name, NO_RESULT))
                continue
            if rec["outcome"] != "ok":
                line = _not_ok_line(host, rec)
            else:
                fig, ratio = rec["figures"], rec["ratio"]
                line = "%s %s: ok, single-stream %s tok/s (%s), peak %s tok/s (%s), accept length %s" % (
                    host, name, md.num(fig["single_stream_tok_s"]), _x(ratio["single_stream"]),
                    md.num(fig["peak_tok_s"]), _x(ratio["peak"]), md.num(fig["accept_length"], 2))
                if wl.random_acceptance(rec.get("workload"), fig["accept_length"]):
                    line += "; " + wl.RANDOM_LINE
            line += "; GPUs free after teardown: %s" % _gpus_free(rec)
            out.append(line)
    return out


SUMMARY_HEAD = ("| host | variant | outcome | single-stream tok/s ↑ | x ref ↑ | peak tok/s (at) ↑ | x ref ↑ | "
                "TTFT p50 at 1 / peak (ms) ↓ | TPOT p50 at 1 / peak (ms) ↓ | TPOT x ref ↓ | ITL p50 at 1 (ms) ↓ | "
                "accept len ↑ | GPUs free after |")
SUMMARY_SEP = "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"


def _summary_row(host, name, outcome, fig, ratio, free):
    if fig is None:
        return "| %s | %s | %s |%s %s |" % (host, name, outcome, " - |" * 9, free)
    peak = "%s (%s)" % (md.num(fig["peak_tok_s"]), fig["peak_concurrency"]) \
        if fig["peak_concurrency"] is not None else md.num(fig["peak_tok_s"])
    return "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s | %s | %s |" % (
        host, name, outcome, md.num(fig["single_stream_tok_s"]), _x(ratio["single_stream"]), peak,
        _x(ratio["peak"]), md.num(fig["ttft_p50_at_1_ms"]), md.num(fig["ttft_p50_at_peak_ms"]),
        md.num(fig["tpot_p50_at_1_ms"]), md.num(fig["tpot_p50_at_peak_ms"]), _x(ratio["tpot"]),
        md.num(fig["itl_p50_at_1_ms"]), md.num(fig["accept_length"], 2), free)


def _level_table(report):
    """Fleet tok/s by concurrency, one column per variant, with the ratio to the reference."""
    fleet, ref = report["fleet"], report["reference"]
    names = [n for n in report["variants"] if fleet[n]["summary"]]
    by = {n: {level_key(r): r for r in fleet[n]["summary"]["levels"]} for n in names}
    keys = sorted({k for n in names for k in by[n]})
    head = "| concurrency |" + "".join(" %s tok/s |" % md_text(n) for n in names) \
        + "".join(" %s/%s ↑ |" % (md_text(n), md_text(ref)) for n in names if n != ref)
    sep = "| ---: |" + " ---: |" * (len(names) + len([n for n in names if n != ref]))
    out = [head, sep]
    for key in keys:
        tok = {n: by[n].get(key, {}).get("output_tok_s") for n in names}
        line = "| %s |" % level_name(key) + "".join(" %s |" % md.num(tok[n]) for n in names)
        line += "".join(" %s |" % _x(_ratio(tok[n], tok.get(ref))) for n in names if n != ref)
        out.append(line)
    return out


def _significance_lines(report, host):
    """Per variant against the reference on HOST, in words (markdown.versus_lines)."""
    ref = report["hosts"][host].get(report["reference"])
    out = []
    for name in report["variants"]:
        rec = report["hosts"][host].get(name)
        if name != report["reference"] and rec and rec["summary"] and ref and ref["summary"]:
            out += md.versus_lines(ref["summary"], rec["summary"],
                                   {"baseline": md_text(report["reference"]), "candidate": md_text(name)})
    return out


def render(report, plot_note=None, plot_name=None):
    ref = md_text(report["reference"])
    lines = ["# %s" % md_text(report["title"]), "",
             "Variants, in the order run on each host: %s. Reference of the ratios (x ref): %s."
             % (", ".join(md_text(n) for n in report["variants"]), ref), "",
             ] + _workload_lines(report) + ["## Summary", "", SUMMARY_HEAD, SUMMARY_SEP]
    for host in sorted(report["hosts"]):
        for name in report["variants"]:
            rec = report["hosts"][host].get(name)
            if rec is None:
                lines.append(_summary_row(md_text(host), md_text(name), "no result", None, None, md.DASH))
            else:
                lines.append(_summary_row(md_text(host), md_text(name), rec["outcome"], rec["figures"], rec["ratio"],
                                          _gpus_free(rec)))
    for name in report["variants"]:
        entry = report["fleet"][name]
        if entry["summary"]:
            lines.append(_summary_row("**fleet** (%d hosts)" % len(entry["hosts"]), md_text(name), "ok",
                                      entry["figures"], entry["ratio"], md.DASH))
    lines += ["", md.ARROWS + " x ref: single-stream and peak tok/s divided by %s's on the same host (above 1 is "
              "faster); TPOT x ref: TPOT p50 at concurrency 1 divided by %s's (below 1 is faster). Fleet tok/s is the sum over hosts at each "
              "concurrency; fleet latencies are per host only. Accept len: %s, from the server's counters; "
              "none without EAGLE-3. "
              "GPUs free after: GPUs that NVML showed free after the variant's teardown. "
              "Definitions: docs/playbooks.md (compare_engines.yml), docs/benchmark.md."
              % (ref, ref, " or ".join("%s (%s)" % (e.accept_length.meaning, e.title) for e in _registry.engines())),
              ""]
    if any(report["fleet"][n]["summary"] for n in report["variants"]):
        lines += ["## Fleet throughput by concurrency (sum over hosts)", ""] + _level_table(report)
    for host in sorted(report["hosts"]):
        words = _significance_lines(report, host)
        if words:
            lines += ["", "## %s: speed-up against %s, significance" % (md_text(host), ref), ""] + words
        if (report.get("categories") or {}).get(host):
            lines += ["", "## %s: by category" % md_text(host), ""] + wl.category_table(report["categories"][host])
        lines += ["", "## %s: latency by level" % md_text(host), "", md.LATENCY_HEAD, md.LATENCY_SEP]
        for name in report["variants"]:
            rec = report["hosts"][host].get(name)
            if rec is not None and rec["summary"]:
                lines += md.latency_rows(rec["summary"], md_text(name))
    lines.append("")
    if plot_name:
        lines += ["![throughput and latency per variant](%s)" % plot_name, ""]
    problems = report["failures"] + list(report.get("notes") or []) + ([plot_note] if plot_note else [])
    if problems:
        lines += ["## Failures and notes", ""] + ["- %s" % md_text(n) for n in problems] + [""]
    return "\n".join(lines)
