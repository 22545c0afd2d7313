# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the reports say about the prompts: the workload's name (with the goodput SLOs the run
counted against, so a goodput figure says what it means) and the per-category table.

Input: llm_benchmark results (their `workload` key and `levels[].categories`).
Per category, one level is compared, the same on every side: the lowest closed-loop
concurrency at which every side has per-category figures (at concurrency 1 a request has the
server to itself, so its TPOT is the speculative drafter's own speed). Acceptance is pooled
over all levels: the category's output tokens over its verify steps (tokens / accept_length
per level), which is what one pass over every level's requests measures. tok/s per category
exists only where llm_benchmark ran each category's own pass (category_passes); its ratio is
the variant's tok/s over the reference's in the same category.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text

DASH = "-"

RANDOM_WARNING = ("WARNING: acceptance measured on random prompts: speculative decoding accepts more on real "
                  "text (and code) than on random tokens, so this accept length and speed-up say little about "
                  "the drafter on a real workload; run with a natural-text workload (source: builtin or file)")
# The playbook line's form (the report gives the whole sentence above).
RANDOM_LINE = "WARNING: accept length measured on random prompts, not real text"


# llm_benchmark's goodput SLOs (its `config`) as the reports name them, in this order.
GOODPUT_SLOS = (("slo_ttft_ms", "TTFT"), ("slo_tpot_ms", "TPOT"), ("slo_e2e_ms", "E2E latency"))


def describe(bench):
    """The `workload` of an llm_benchmark result BENCH; random prompts when it names none
    (results written before workloads existed were all random); None without a result. With
    `goodput_slos` ({slo_ttft_ms: 2000, ...}: those set) when the run counted goodput."""
    if not isinstance(bench, Mapping) or not isinstance(bench.get("levels"), list):
        return None
    info = bench.get("workload")
    out = dict(info) if isinstance(info, Mapping) else {"source": "random"}
    config = bench.get("config") if isinstance(bench.get("config"), Mapping) else {}
    slos = {key: config[key] for key, _name in GOODPUT_SLOS if config.get(key) is not None}
    if slos:
        out["goodput_slos"] = slos
    return out


def slo_text(info):
    """'goodput SLOs: TTFT ≤ 2000 ms, TPOT ≤ 50 ms' for the SLOs INFO's run counted goodput against; ''
    without (goodput then is not measured)."""
    slos = (info or {}).get("goodput_slos") if isinstance(info, Mapping) else None
    if not slos:
        return ""
    return "goodput SLOs: " + ", ".join("%s ≤ %g ms" % (name, float(slos[key])) for key, name in GOODPUT_SLOS
                                        if slos.get(key) is not None)


def is_random(info):
    return isinstance(info, Mapping) and (info.get("source") or "random") == "random"


def random_acceptance(info, accept_length):
    """Whether an acceptance length ACCEPT_LENGTH was measured on random prompts (INFO)."""
    return accept_length is not None and is_random(info)


def random_suffix(info, accept_length):
    """What a playbook's host line appends: "; " and RANDOM_LINE when ACCEPT_LENGTH was
    measured on random prompts (INFO, the result's workload), else nothing."""
    return "; " + RANDOM_LINE if random_acceptance(info, accept_length) else ""


def workload_text(info):
    """One line naming the workload: set or file (format, sha256), sample size, seed; and the
    goodput SLOs of the run, where it had any (slo_text)."""
    text = _source_text(info)
    slos = slo_text(info)
    return "%s; %s" % (text, slos) if slos else text


def _source_text(info):
    if not isinstance(info, Mapping):
        return "unknown (no result)"
    if is_random(info):
        return "random prompts (no categories)"
    if info.get("path"):
        where = "file %s (%s, sha256 %s)" % (info["path"], info.get("format") or "?", info.get("sha256") or "?")
    else:
        where = "built-in set %s" % (info.get("name") or "?")
    sample = "%s items" % info.get("sample")
    if info.get("available") is not None and info.get("available") != info.get("sample"):
        sample = "%s of %s items" % (info.get("sample"), info.get("available"))
    text = "%s, %s, seed %s" % (where, sample, info.get("seed"))
    if info.get("categories_filter"):
        text += ", categories %s" % ", ".join(str(c) for c in info["categories_filter"])
    if info.get("multi_turn_items"):
        text += ", %s multi-turn" % info["multi_turn_items"]
    return text + ", output length %s" % (info.get("output_len_mode") or "fixed")


def workload_lines(named):
    """Markdown lines naming each distinct workload of NAMED ([(label, info)]), and the warning
    when one measured acceptance on random prompts (NAMED's info carries `accept_length`)."""
    seen = {}
    for label, info in named:
        seen.setdefault(workload_text(info), []).append(label)
    out = ["- %s: %s" % (", ".join(labels), md_text(text)) for text, labels in seen.items()]
    if any(random_acceptance(info, (info or {}).get("accept_length")) for _label, info in named):
        out.append("- **%s**" % RANDOM_WARNING)
    return out


def _closed_levels(levels):
    return {lv["concurrency"]: lv for lv in levels or []
            if isinstance(lv, Mapping) and not lv.get("request_rate") and lv.get("categories")}


def common_level(sides):
    """The concurrency compared per category: the lowest at which every side of SIDES (lists of
    levels; None entries skipped) has categories; None when there is no such level."""
    present = [_closed_levels(levels) for levels in sides if levels]
    present = [p for p in present if p]
    if not present:
        return None
    common = set(present[0])
    for p in present[1:]:
        common &= set(p)
    return min(common) if common else None


def _accept_tokens(fig):
    """The output tokens an acceptance length of a category's figures FIG was measured over:
    its own pass's (every request the counters saw) where it came from there."""
    if str(fig.get("accept_source") or "").startswith("pass_"):
        return (fig.get("own_pass") or {}).get("level_output_tokens")
    return fig.get("output_tokens")


def pooled_accept(levels, category):
    """Tokens over verify steps of CATEGORY over every level that has its acceptance."""
    tokens = steps = 0.0
    for lv in levels or []:
        fig = ((lv or {}).get("categories") or {}).get(category) or {}
        weight = _accept_tokens(fig)
        if fig.get("accept_length") and weight:
            tokens += weight
            steps += weight / float(fig["accept_length"])
    return round(tokens / steps, 3) if steps else None


def accept_sources(levels, category):
    """The sources (llm_benchmark's categories[].accept_source) of CATEGORY's acceptance over all levels."""
    return sorted({str(fig["accept_source"]) for fig in
                   (((lv or {}).get("categories") or {}).get(category) or {} for lv in levels or [])
                   if fig.get("accept_source")})


def _p50(fig, key):
    return ((fig or {}).get(key) or {}).get("p50")


def category_figures(levels, concurrency):
    """{category: figures at CONCURRENCY, with the acceptance pooled over all levels}."""
    level = _closed_levels(levels).get(concurrency)
    if level is None:
        return {}
    out = {}
    for category, fig in sorted(level["categories"].items()):
        out[category] = {
            "requests": fig.get("requests"), "failed": fig.get("failed"),
            "ttft_p50_ms": _p50(fig, "ttft_ms"), "tpot_p50_ms": _p50(fig, "tpot_ms"),
            "e2e_p50_ms": _p50(fig, "latency_ms"),
            "accept_length": pooled_accept(levels, category),
            "accept_sources": accept_sources(levels, category),
            # Measured only by the category's own pass (llm_benchmark category_passes).
            "output_tok_s": fig.get("output_tok_s") if fig.get("output_tok_s_source") == "pass" else None,
        }
    return out


def speedup(fig, ref):
    """The reference's TPOT p50 over FIG's: above 1, FIG generates each token faster."""
    a, b = (fig or {}).get("tpot_p50_ms"), (ref or {}).get("tpot_p50_ms")
    return round(b / a, 3) if a and b else None


def tok_s_ratio(fig, ref):
    """FIG's tok/s of its category's own pass over the reference's (above 1: more tok/s)."""
    a, b = (fig or {}).get("output_tok_s"), (ref or {}).get("output_tok_s")
    return round(a / b, 3) if a and b else None


# A category with fewer counted requests than this at the compared level gets a warning: its
# percentiles and acceptance rest on too few requests to compare.
MIN_CATEGORY_REQUESTS = 10


def categories(named, reference, level=None, min_requests=MIN_CATEGORY_REQUESTS):
    """The per-category comparison of NAMED ([(label, levels)]) against the label REFERENCE:
    {"concurrency": C, "variants": {label: {category: figures + speedup}}, "warnings": [...]};
    None without categories. LEVEL (category_level) chooses the concurrency where every side
    has per-category figures there; else (and with a warning when LEVEL was not measured) the
    lowest common one. A warning names each category with fewer than MIN_REQUESTS requests at
    that level and each one seen at another level but missing there."""
    sides = [levels for _label, levels in named]
    warnings = []
    conc = common_level(sides)
    if conc is None:
        return None
    if level is not None:
        if all(level in _closed_levels(levels) for levels in sides if levels):
            conc = level
        else:
            warnings.append("WARNING: category_level %s has no per-category figures on every side; compared at "
                            "concurrency %s instead" % (level, conc))
    figs = {label: category_figures(levels, conc) for label, levels in named if levels}
    warnings += category_warnings(named, figs, conc, min_requests)
    ref = figs.get(reference) or {}
    for label, by_cat in figs.items():
        for category, fig in by_cat.items():
            fig["speedup"] = speedup(fig, ref.get(category)) if label != reference else None
            fig["tok_s_ratio"] = tok_s_ratio(fig, ref.get(category)) if label != reference else None
    return {"concurrency": conc, "reference": reference, "variants": figs, "warnings": warnings}


def category_warnings(named, figs, conc, min_requests=MIN_CATEGORY_REQUESTS):
    """The warnings of a per-category comparison at concurrency CONC: categories with fewer than
    MIN_REQUESTS counted requests there (on any side), and categories that some level of some
    side measured but CONC lacks (on any side)."""
    seen = sorted({c for _label, levels in named for lv in _closed_levels(levels).values() for c in lv["categories"]})
    few, missing = {}, []
    for category in seen:
        counts = [by.get(category, {}).get("requests") for by in figs.values()]
        if any(n is None for n in counts):
            missing.append(category)
        elif min(counts) < min_requests:
            few[category] = min(counts)
    out = []
    if few:
        out.append("WARNING: fewer than %d requests at concurrency %s in %s: too few to compare; raise "
                   "requests_per_level or choose another level (category_level)"
                   % (min_requests, conc, ", ".join("%s (%d)" % (c, n) for c, n in few.items())))
    if missing:
        out.append("WARNING: no request at concurrency %s in %s (measured at another level): choose a level where "
                   "every category ran (category_level) or raise requests_per_level" % (conc, ", ".join(missing)))
    return out


def _num(x, digits=1):
    return DASH if x is None else "%.*f" % (digits, x)


def _x(value):
    return DASH if value is None else "%.2fx" % value


def category_table(table, titles=None):
    """Markdown lines of a `categories` result: one row per category, for each variant its
    accept length and TTFT / TPOT p50, and the TPOT speed-up against the reference; with tok/s
    of the categories' own passes, each variant's tok/s and its ratio to the reference's.
    TITLES maps a variant's key to the name shown (default: the key)."""
    if not table:
        return []
    labels, ref = list(table["variants"]), table["reference"]
    shown = {n: md_text((titles or {}).get(n, n)) for n in labels + [ref]}
    others = [n for n in labels if n != ref]
    cats = sorted({c for by in table["variants"].values() for c in by})
    figs = [f for by in table["variants"].values() for f in by.values()]
    passes = any(f.get("output_tok_s") is not None for f in figs)
    head = "| category | requests |" + "".join(" %s accept len |" % shown[n] for n in labels) \
        + "".join(" %s TTFT / TPOT p50 (ms) |" % shown[n] for n in labels) \
        + "".join(" %s speed-up ↑ |" % shown[n] for n in others)
    columns = 2 * len(labels) + len(others)
    if passes:
        head += "".join(" %s tok/s |" % shown[n] for n in labels) \
            + "".join(" %s tok/s x %s ↑ |" % (shown[n], shown[ref]) for n in others)
        columns += len(labels) + len(others)
    sep = "| --- | ---: |" + " ---: |" * columns
    intro = ("Per category at concurrency %d (acceptance: over all levels). Speed-up: %s's TPOT p50 over the "
             "variant's, in the same category (above 1: faster per token); " % (table["concurrency"], shown[ref]))
    if passes:
        intro += ("tok/s: each category's own pass at that concurrency, its items alone (llm_benchmark "
                  "category_passes), since the categories share the server within a level.")
    else:
        intro += ("tok/s is not split by category, since the categories share the server within a level "
                  "(the benchmark option category_passes measures it, one pass per category).")
    if any(src.startswith("pass_") for f in figs for src in f.get("accept_sources") or []):
        intro += (" Acceptance marked * is from the server's counters around the category's own pass (the engine "
                  "gives none per request).")
    out = [intro, ""] + [md_text(w) for w in table.get("warnings") or []] \
        + ([""] if table.get("warnings") else []) + [head, sep]
    for cat in cats:
        row = {n: table["variants"][n].get(cat) or {} for n in labels}
        # The reference's count; a variant without a result (a failed one) has no row.
        requests = next((row[n].get("requests") for n in [ref] + others
                         if n in row and row[n].get("requests") is not None), None)
        line = "| %s | %s |" % (md_text(cat), DASH if requests is None else requests)
        line += "".join(" %s%s |" % (_num(row[n].get("accept_length"), 2), _pass_mark(row[n])) for n in labels)
        line += "".join(" %s / %s |" % (_num(row[n].get("ttft_p50_ms")), _num(row[n].get("tpot_p50_ms")))
                        for n in labels)
        line += "".join(" %s |" % _x(row[n].get("speedup")) for n in others)
        if passes:
            line += "".join(" %s |" % _num(row[n].get("output_tok_s")) for n in labels)
            line += "".join(" %s |" % _x(row[n].get("tok_s_ratio")) for n in others)
        out.append(line)
    return out


def _pass_mark(fig):
    return "*" if fig.get("accept_length") is not None and any(
        src.startswith("pass_") for src in fig.get("accept_sources") or []) else ""
