# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the rollout probe (router_probe) saw: the figures of docs/rollout.md's traffic report.

Phases come from the router's own worker list: `before` is every request started before the first
reading whose healthy workers differ from the first reading's, `after` every request started after
the last change, `during` the rest (a run whose router never changed is all `during`). A worker's
time out of the router is the time between readings that did not list it healthy; the host it
belongs to is the one whose drain names its URL (the swap's per-host `drain`).
"""

from __future__ import annotations

import json

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stats import percentile
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import rollout_plot
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.files import write_report
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.text import num

PHASES = ("before", "during", "after")
OUTCOMES = ("ok", "failed", "broken")


def change_window(samples: list) -> tuple | None:
    """(first, last) time at which the healthy workers differed from the previous reading; None when
    they never did. Unread samples are skipped."""
    read = [s for s in samples if s.get("healthy") is not None]
    changes = [b["t"] for a, b in zip(read, read[1:]) if a["healthy"] != b["healthy"]]
    return (changes[0], changes[-1]) if changes else None


def phase_of(start: float, window: tuple | None) -> str:
    if window is None:
        return "during"
    return "before" if start < window[0] else "after" if start >= window[1] else "during"


def _ms(values: list, q: int) -> float | None:
    value = percentile(values, q)
    return None if value is None else round(value * 1000.0, 1)


def latency(requests: list) -> dict:
    """Count, failures and TTFT/TPOT p50/p99 (ms) of the completed ones among REQUESTS."""
    ok = [r for r in requests if r["outcome"] == "ok"]
    ttft = [r["ttft"] for r in ok if r.get("ttft") is not None]
    tpot = [r["tpot"] for r in ok if r.get("tpot") is not None]
    return {"requests": len(requests), "ok": len(ok), "lost": len(requests) - len(ok),
            "ttft_p50_ms": _ms(ttft, 50), "ttft_p99_ms": _ms(ttft, 99),
            "tpot_p50_ms": _ms(tpot, 50), "tpot_p99_ms": _ms(tpot, 99)}


def out_of_router(samples: list) -> dict:
    """{worker URL: seconds it was not listed healthy} over every URL ever listed."""
    read = [s for s in samples if s.get("healthy") is not None]
    urls = sorted({u for s in read for u in (s.get("listed") or []) + s["healthy"]})
    out = {u: 0.0 for u in urls}
    for a, b in zip(read, read[1:]):
        for url in urls:
            if url not in a["healthy"]:
                out[url] += b["t"] - a["t"]
    return {u: round(v, 2) for u, v in out.items()}


def per_host(drains: dict, away: dict) -> list:
    """One row per host of the rollout (DRAINS: host -> its teardown's drain, or None): its worker,
    drain seconds, seconds out of the router."""
    rows = []
    for host in sorted(drains or {}):
        drain = drains[host] or {}
        worker = drain.get("worker")
        rows.append({"host": host, "worker": worker, "drain_s": drain.get("drain_s"),
                     "aborted": drain.get("aborted"), "out_of_router_s": away.get(worker) if worker else None})
    return rows


def summarize(probe: dict, drains: dict | None = None) -> dict:
    """The report's figures from a router_probe result and the rollout's drains by host."""
    requests = probe.get("requests") or []
    samples = probe.get("samples") or []
    window = change_window(samples)
    counts = {o: sum(1 for r in requests if r["outcome"] == o) for o in OUTCOMES}
    healthy = [len(s["healthy"]) for s in samples if s.get("healthy") is not None]
    return {
        "router_url": probe.get("router_url"), "clients": probe.get("clients"), "duration_s": probe.get("duration_s"),
        "sent": len(requests), "completed": counts["ok"], "failed": counts["failed"], "broken": counts["broken"],
        "healthy_floor": min(healthy) if healthy else None, "healthy_max": max(healthy) if healthy else None,
        "router_unread": sum(1 for s in samples if s.get("healthy") is None),
        "change_window_s": list(window) if window else None,
        "phases": {p: latency([r for r in requests if phase_of(r["start"], window) == p]) for p in PHASES},
        "hosts": per_host(drains or {}, out_of_router(samples)),
        "errors": sorted({r["error"] for r in requests if r.get("error")})[:5],
    }


def headline(summary: dict) -> str:
    """One line: the figures a rollout is judged by."""
    return ("%d requests through the router, %d completed, %d failed, %d broken streams; fewest healthy workers %s"
            " of %s" % (summary["sent"], summary["completed"], summary["failed"], summary["broken"],
                        summary["healthy_floor"], summary["healthy_max"]))


def markdown(summary: dict, plot_note: str | None = None, plot_name: str | None = None) -> str:
    """The report's Markdown (files.write_report's render_markdown)."""
    intro = "%d streaming clients through %s for %s s. %s." % (
        summary["clients"] or 0, md_text(summary["router_url"]), num(summary["duration_s"]), headline(summary))
    lines = ["# %s" % md_text(summary["title"]), "", intro, "",
             "| phase | requests | lost | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in PHASES:
        p = summary["phases"][name]
        cells = (name, p["requests"], p["lost"], num(p["ttft_p50_ms"]), num(p["ttft_p99_ms"]),
                 num(p["tpot_p50_ms"], 2), num(p["tpot_p99_ms"], 2))
        lines.append("| %s | %d | %d | %s | %s | %s | %s |" % cells)
    if summary["hosts"]:
        lines += ["", "| host | worker | drain s | out of the router s |", "| --- | --- | ---: | ---: |"]
        lines += ["| %s | %s | %s | %s |" % (md_text(h["host"]), md_text(h["worker"]) if h["worker"] else "-",
                                             num(h["drain_s"], 2), num(h["out_of_router_s"])) for h in summary["hosts"]]
    if summary["errors"]:
        lines += ["", "Errors seen: " + "; ".join(md_text(e) for e in summary["errors"])]
    if plot_name:
        lines += ["", "![throughput and healthy workers over time](%s)" % plot_name]
    if plot_note:
        lines += ["", md_text(plot_note)]
    return "\n".join(lines) + "\n"


def throughput(requests: list, width: float = 2.0) -> list:
    """[(bin start, output tok/s)] of the completed requests, each request's tokens spread evenly
    over its streaming (from its first token to its end)."""
    spans = [(r["start"] + (r.get("ttft") or 0.0), r["end"], r["tokens"]) for r in requests if r["outcome"] == "ok"]
    if not spans:
        return []
    totals = [0.0] * (int(max(e for unused, e, unused_t in spans) // width) + 1)
    for first, end, tokens in spans:
        if end <= first:
            totals[int(end // width)] += tokens
            continue
        for index in range(int(first // width), int(end // width) + 1):
            overlap = min(end, (index + 1) * width) - max(first, index * width)
            totals[index] += tokens * max(overlap, 0.0) / (end - first)
    return [(i * width, round(t / width, 1)) for i, t in enumerate(totals)]


def healthy_series(samples: list) -> list:
    """[(t, healthy workers)] of the readings that were read."""
    return [(s["t"], len(s["healthy"])) for s in samples if s.get("healthy") is not None]


def losses(requests: list) -> list:
    """[(t, outcome)] of the requests that did not complete, at their end."""
    return [(r["end"], r["outcome"]) for r in requests if r["outcome"] != "ok"]


def report(probe: dict, drains: dict | None, title: str) -> dict:
    """What the JSON report keeps: the summary and the series the plot draws."""
    requests = probe.get("requests") or []
    return dict(summarize(probe, drains), title=title, notes=[], throughput=throughput(requests),
                healthy=healthy_series(probe.get("samples") or []), losses=losses(requests))


def build(probe: dict, drains: dict | None, dest_dir: str, title: str, basename: str = "rollout_probe",
          check_mode: bool = False) -> dict:
    """BASENAME.json, .md, .png and .html under DEST_DIR (files.write_report); the figures a playbook
    checks added as `figures` (sent, completed, failed, broken, healthy_floor: never at the top, where
    Ansible would read `failed` as the task's) with the headline."""
    data = report(json.loads(json.dumps(probe)), json.loads(json.dumps(drains or {})), title)
    out = write_report(data, dest_dir, basename, markdown, rollout_plot.render_png, check_mode=check_mode)
    out.update(figures={k: data[k] for k in ("sent", "completed", "failed", "broken", "healthy_floor")},
               headline=headline(data))
    return out
