# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The merged benchmark report as Markdown tables (deterministic text)."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.merge import level_key, level_name
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.merge import ratios as level_ratios
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.topology import line as topology_line

DASH = "-"


def _num(x, digits=1):
    return DASH if x is None else "%.*f" % (digits, x)


num = _num  # the same, for the other renderers (compare.py)


# Every table says which way is better in its headers; this line says what the arrows mean.
ARROWS = "↑: higher is better; ↓: lower is better."


def _ratio(x):
    return DASH if x is None else "%.2fx" % x


def _pair(d):
    if not d:
        return DASH
    return "%s / %s" % (_num(d.get("p50")), _num(d.get("p99")))


def _summary_rows(name, entry, labels):
    rows = []
    for side in ("baseline", "candidate"):
        s = entry.get(side)
        if s is None:
            continue
        rows.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, labels[side], _num(s["single_stream_tok_s"]), _num(s["peak_tok_s"]),
            s["peak_concurrency"] if s["peak_concurrency"] is not None else DASH,
            _pair(s["ttft_at_1_ms"]), _pair(s["ttft_at_peak_ms"]),
            _num(s["accept_length"], 2), s["failed"],
        ))
    return rows


def _level_table(entry, labels, ttft=True):
    b, c = entry.get("baseline"), entry.get("candidate")
    levels = sorted({level_key(r) for s in (b, c) if s for r in s["levels"]})
    by = {side: {level_key(r): r for r in (entry[side] or {"levels": []})["levels"]}
          for side in ("baseline", "candidate")}
    ratio = {level_key(r): r["ratio"] for r in entry.get("ratio") or []}
    head = "| concurrency | %s tok/s ↑ | %s tok/s ↑ | %s/%s tok/s ↑ |" % (
        labels["baseline"], labels["candidate"], labels["candidate"], labels["baseline"])
    sep = "| ---: | ---: | ---: | ---: |"
    if ttft:
        head += " %s TTFT p50 (ms) ↓ | %s TTFT p50 (ms) ↓ |" % (labels["baseline"], labels["candidate"])
        sep += " ---: | ---: |"
    head += " %s accept len ↑ |" % labels["candidate"]
    sep += " ---: |"
    out = [head, sep]
    for lv in levels:
        rb, rc = by["baseline"].get(lv, {}), by["candidate"].get(lv, {})
        line = "| %s | %s | %s | %s |" % (level_name(lv), _num(rb.get("output_tok_s")),
                                          _num(rc.get("output_tok_s")), _ratio(ratio.get(lv)))
        if ttft:
            line += " %s | %s |" % (_num(rb.get("ttft_p50_ms")), _num(rc.get("ttft_p50_ms")))
        line += " %s |" % _num(rc.get("accept_length"), 2)
        out.append(line)
    return out


def _ci(ci):
    return "%s [%s, %s]" % (_num(ci["mean"]), _num(ci["low"]), _num(ci["high"]))


ONE_RUN = "one run, no interval"


def significance_line(r, labels):
    """One level's sentence of a ratio row (merge.ratios): significant only when the two 95%
    intervals of tok/s do not overlap; ONE_RUN where a side was measured once."""
    b, c = r.get("baseline_ci"), r.get("candidate_ci")
    head = "- concurrency %s: %s/%s %s" % (level_name(level_key(r)), labels["candidate"], labels["baseline"],
                                           _ratio(r["ratio"]))
    if r.get("significant") is None:
        return "%s: %s." % (head, ONE_RUN)
    verdict = ("significant: the 95%% intervals do not overlap, so %s is %s than %s here"
               % (labels["candidate"], "faster" if r["ratio"] > 1 else "slower", labels["baseline"])
               if r["significant"] else
               "not significant at 95%: the intervals overlap, so these runs do not show a difference")
    return "%s, tok/s %s vs %s (mean [95%% interval] of %d and %d runs): %s." % (
        head, _ci(c), _ci(b), c["n"], b["n"], verdict)


def significance_lines(ratios, labels):
    """In words, per level measured with repeats on both sides: whether the tok/s ratio is
    significant (significance_line); levels measured once are left out."""
    return [significance_line(r, labels) for r in ratios or [] if r.get("significant") is not None]


def versus_lines(reference, summary, labels):
    """In words, one variant's side SUMMARY against the REFERENCE's (merge.side_summary):
    a sentence per level present on both; one sentence when no level has intervals on both
    sides (every run of each level measured once)."""
    rows = level_ratios(reference, summary)
    if not rows:
        return []
    if all(r.get("significant") is None for r in rows):
        return ["- %s/%s: %s (repeats: 1), so no level's speed-up is tested." % (
            labels["candidate"], labels["baseline"], ONE_RUN)]
    return [significance_line(r, labels) for r in rows]


def _q(row, name):
    """'p50 / p99' of one latency figure of a row; ITL estimates are marked with ~."""
    p50, p99 = row.get("%s_p50_ms" % name), row.get("%s_p99_ms" % name)
    if p50 is None and p99 is None:
        return DASH
    mark = "~" if name == "itl" and row.get("itl_estimated") else ""
    return "%s%s / %s%s" % (mark, _num(p50), mark, _num(p99))


LATENCY_HEAD = ("| level | variant | tok/s ↑ | tok/J ↑ | server tok/s (client/counter) ↑ | req/s ↑ | goodput req/s ↑ | "
                "TTFT p50 / p99 (ms) ↓ | TPOT p50 / p99 (ms) ↓ | ITL p50 / p99 (ms) ↓ | E2E p50 / p99 (ms) ↓ |")
LATENCY_SEP = "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
# After a level's tok/J when a GPU was throttled during it (llm_benchmark's levels[].throttled).
THROTTLED_MARK = " THROTTLED"


def tokens_per_joule(row):
    """A level's tok/J cell: the figure, marked when its GPUs were throttled."""
    mark = THROTTLED_MARK if row.get("throttled") else ""
    if row.get("output_tokens_per_joule") is None:
        return DASH + mark
    return _num(row["output_tokens_per_joule"], 3) + mark


def latency_rows(summary, label):
    """Every figure of every level of one side summary (merge.side_summary), named LABEL."""
    out = []
    for r in (summary or {}).get("levels", []):
        server = DASH
        if r.get("server_tok_s") is not None:
            server = "%s (%s)" % (_num(r["server_tok_s"]), _num(r.get("server_ratio"), 4))
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            level_name(level_key(r)), label, _num(r.get("output_tok_s")), tokens_per_joule(r), server,
            _num(r.get("requests_per_s"), 2), _num(r.get("goodput_req_s"), 2), _q(r, "ttft"), _q(r, "tpot"),
            _q(r, "itl"), _q(r, "e2e")))
    return out


def _latency_table(entry, labels):
    """Every figure of every level of one host, both sides (docs/benchmark.md defines them)."""
    out = [LATENCY_HEAD, LATENCY_SEP]
    for side in ("baseline", "candidate"):
        out += latency_rows(entry.get(side), labels[side])
    return out + ["", TOK_J_NOTE]


TOK_J_NOTE = ("tok/J: output tokens per joule of the server's GPUs over the level's window (llm_benchmark's "
              "telemetry; docs/telemetry.md);%s: a GPU's clocks were held down during the level." % THROTTLED_MARK)


def _workload_lines(report):
    """Each host's workload per side; the random-prompt warning where acceptance was measured."""
    named = []
    for host in sorted(report["hosts"]):
        entry = report["hosts"][host]
        for side in ("baseline", "candidate"):
            info = (entry.get("workload") or {}).get(side)
            if info is not None and entry.get(side) is not None:
                named.append(("%s %s" % (md_text(host), md_text(report["labels"][side])),
                              dict(info, accept_length=entry[side]["accept_length"])))
    return ["## Workload", ""] + wl.workload_lines(named) + [""] if named else []


def render(report, plot_note=None, plot_name=None):
    labels = {side: md_text(label) for side, label in report["labels"].items()}
    lines = ["# %s" % md_text(report["title"]), ""]
    lines += _workload_lines(report)
    lines += [
        "## Summary", "",
        "| host | variant | single-stream tok/s ↑ | peak tok/s ↑ | peak concurrency | "
        "TTFT p50 / p99 at 1 (ms) ↓ | TTFT p50 / p99 at peak (ms) ↓ | accept len ↑ | failed ↓ |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for host in sorted(report["hosts"]):
        lines += _summary_rows(md_text(host), report["hosts"][host], labels)
    fleet = report["fleet"]
    nhosts = max((fleet[s] or {}).get("hosts", 0) for s in ("baseline", "candidate"))
    lines += _summary_rows("**fleet** (%d hosts)" % nhosts, fleet, labels)
    lines += ["", "Fleet tok/s is the sum over hosts at each concurrency (per host); "
              "fleet accept len is the mean over hosts; TTFT is per host only.", ""]

    lines += ["## Fleet throughput by concurrency (sum over hosts)", ""]
    lines += _level_table(fleet, labels, ttft=False)
    for host in sorted(report["hosts"]):
        lines += ["", "## %s" % md_text(host), ""]
        if report["hosts"][host].get("topology"):
            lines += ["Topology: %s." % md_text(topology_line(report["hosts"][host]["topology"])), ""]
        lines += _level_table(report["hosts"][host], labels)
        words = significance_lines(report["hosts"][host].get("ratio"), labels)
        if words:
            lines += ["", "Speed-up with repeats:", ""] + words
        if report["hosts"][host].get("categories"):
            lines += ["", "### %s: by category" % md_text(host), ""]
            lines += wl.category_table(report["hosts"][host]["categories"], report["labels"])
        lines += ["", "### %s: latency by level" % md_text(host), ""]
        lines += _latency_table(report["hosts"][host], labels)
    lines += ["", ARROWS + " ITL marked ~ is an estimate (the server sent no per-chunk usage). "
              "Server tok/s (client/counter): the server's own counter of output tokens, in brackets the client's "
              "count divided by it (1 when they agree). Definitions: docs/benchmark.md."]
    lines.append("")
    if plot_name:
        lines += ["![throughput against concurrency](%s)" % plot_name, ""]
    notes = list(report.get("notes") or [])
    if plot_note:
        notes.append(plot_note)
    if notes:
        lines += ["## Notes", ""] + ["- %s" % md_text(n) for n in notes] + [""]
    return "\n".join(lines)
