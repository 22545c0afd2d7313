# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The experiment's report: every variant against the reference, the gates, what did not complete.

The comparison itself is the engine comparison's (_report/compare.py: the same figures, ratios,
per-category table and plot), fed with each record's own engine and speculative flag. Without
spread each host is compared with itself; with spread each variant ran on one host only, so
every host's records form one group ("fleet (spread over N hosts)") and each variant is compared
with the reference wherever that ran. Written as experiment.json, .md and .png (files.write_report:
only where the content differs).
"""

from __future__ import annotations

import json

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import gates as _gates
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import unmodelled as _unmodelled
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare as _compare
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import markdown as md
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.compare_plot import render_png
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.files import write_report

BASENAME = "experiment"
NOT_RECORDED = "NO RESULT, not recorded (the host left the play or the run stopped before this variant)"
GATES_HEAD = "| host | variant | gate | limit | value | result | detail |"
GATES_SEP = "| --- | --- | --- | ---: | ---: | --- | --- |"


def spread_label(experiment):
    return "fleet (spread over %d hosts)" % len(experiment["assignments"])


def _record(experiment, host, name, raw):
    """The record as compare.py reads it, with the variant's engine and speculative flag."""
    variant = next(v for v in experiment["variants"] if v["name"] == name)
    rec = {k: v for k, v in raw.items() if k not in ("fingerprint", "finished_at")}
    rec.update(variant=name, engine=variant["engine"], speculative=bool(variant["speculative"]), host=host)
    return rec


def measured_elsewhere(raw):
    """Whether RAW is the record of a node of rank >= 1 of a server that spans hosts: it ran, and rank 0
    measured it (its own record holds the figures)."""
    return raw.get("outcome") == "ok" and bool(raw.get("measured_at"))


def _records(experiment, records_by_host):
    """{host: {variant: record}} of the assigned variants that have a record of their own, in the order run."""
    return {host: {n: _record(experiment, host, n, records_by_host[host][n])
                   for n in names if n in (records_by_host.get(host) or {})
                   and not measured_elsewhere(records_by_host[host][n])}
            for host, names in experiment["assignments"].items()}


def _nodes_of(records_by_host):
    """{(host, variant)} of the records measured at another node (measured_elsewhere)."""
    return {(host, name) for host, by_name in records_by_host.items() for name, raw in (by_name or {}).items()
            if measured_elsewhere(raw)}


def topology_notes(recs, every=False):
    """One note per variant measured across hosts (with EVERY, when the experiment sets the topology, per
    variant): its topology (the report's comparison is per host; a group is compared at its rank 0)."""
    out = []
    for host, by_name in sorted(recs.items()):
        for name, rec in by_name.items():
            topo = rec.get("topology") or {}
            if not topo.get("nodes") or not (every or topo.get("nnodes", 1) > 1):
                continue
            shape = " ".join("%s%s" % (key[:2].upper(), topo[key]) for key in ("tp_size", "pp_size", "dp_size", "ep_size")
                             if topo.get(key) and (key == "tp_size" or topo[key] > 1))
            out.append("%s %s: %s%s (nnodes %d)%s" % (
                host, name, shape + " on " if shape else "", ", ".join(topo["nodes"]), topo["nnodes"],
                ", measured at rank 0" if topo["nnodes"] > 1 else ""))
    return out


def _groups(experiment, recs):
    if experiment["spread"]:
        order = [v["name"] for v in experiment["variants"]]
        merged = {n: r for by_name in recs.values() for n, r in by_name.items()}
        return {spread_label(experiment): [merged[n] for n in order if n in merged]}
    # A host that only stood by or served as a node of rank >= 1 has nothing of its own to compare
    # (while another host has).
    some = any(recs.values())
    return {host: list(by_name.values()) for host, by_name in recs.items() if by_name or not some}


def failures(experiment, recs, elsewhere=frozenset()):
    """'HOST VARIANT: ...' for each assigned variant that has no record or did not complete (ELSEWHERE: the
    (host, variant) measured at another node, which are complete)."""
    out = []
    for host, names in experiment["assignments"].items():
        for name in names:
            if (host, name) in elsewhere:
                continue
            rec = recs[host].get(name)
            if rec is None:
                out.append("%s %s: %s" % (host, name, NOT_RECORDED))
            elif rec.get("outcome") != "ok":
                out.append("%s %s: %s at stage %s: %s" % (host, name, str(rec.get("outcome") or "failed").upper(),
                                                          rec.get("stage") or "?", rec.get("reason") or ""))
    return out


def _reference_record(experiment, recs, host):
    ref = experiment["reference"]
    if not experiment["spread"]:
        return recs[host].get(ref)
    return next((by_name[ref] for by_name in recs.values() if ref in by_name), None)


def gate_rows(experiment, recs):
    """[{host, variant, gate, level, limit, value, passed, detail}] for every completed variant's gates."""
    rows = []
    for host, names in experiment["assignments"].items():
        for variant in (v for v in experiment["variants"] if v["name"] in names):
            rec = recs[host].get(variant["name"])
            if rec is None or rec.get("outcome") != "ok":
                continue  # listed under failures: nothing was measured
            for entry in _gates.evaluate(rec, _reference_record(experiment, recs, host), variant["gates"],
                                         experiment["reference"]):
                rows.append(dict(entry, host=host, variant=variant["name"]))
    return rows


def _value(value):
    return md.DASH if value is None else ("%g" % value if isinstance(value, float) else str(value))


def _limit(row):
    level = " at %s" % row["level"] if row.get("level") is not None else ""
    return "%s%s" % (row["limit"], level)


def render_gates(rows):
    if not rows:
        return ["## Gates", "", "No gates (or no completed variant to gate).", ""]
    out = ["## Gates", "", GATES_HEAD, GATES_SEP]
    for r in rows:
        cells = (md_text(r["host"]), md_text(r["variant"]), r["gate"], md_text(_limit(r)), _value(r["value"]),
                 "pass" if r["passed"] else "**FAIL**", md_text(r["detail"]))
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % cells)
    return out + ["", "Definitions of the gates: docs/playbooks.md (experiment.yml).", ""]


def _experiment_lines(experiment):
    return ["Experiment %s from %s (%s); reference %s; %s." % (
        md_text(experiment["name"]), md_text(experiment["file"]), experiment["checksum"],
        md_text(experiment["reference"]),
        "variants spread over %d hosts" % len(experiment["assignments"]) if experiment["spread"]
        else "every host runs every variant"), ""]


def _markdown(experiment, rows):
    def render(report, plot_note=None, plot_name=None):
        text = _compare.render(report, plot_note=plot_note, plot_name=plot_name)
        title, rest = text.split("\n", 1)
        return "\n".join([title, ""] + _experiment_lines(experiment)) + rest.rstrip("\n") + "\n\n" \
            + "\n".join(render_gates(rows))
    return render


def _lines(report, rows, spread_group):
    """compare.host_lines (one per host and variant, hosts sorted, variants in order), each with its gates."""
    keys = [(h, n) for h in sorted(report["hosts"]) for n in report["variants"]]
    out = []
    for (host, name), line in zip(keys, _compare.host_lines(report)):
        mine = [r for r in rows if r["variant"] == name and (spread_group or r["host"] == host)]
        failed = [r for r in mine if not r["passed"]]
        if failed:
            line += "; gates FAILED: " + ", ".join(_gates.failure_text(r["host"], name, r).split(": ", 1)[1]
                                                   for r in failed)
        elif mine:
            line += "; gates passed (%d)" % len(mine)
        out.append(line)
    return out


def build(experiment, records_by_host, dest_dir, title, check_mode=False, simulator_models=None):
    """Write the report; {markdown, json_path, markdown_path, plot_path, lines, failures, gate_failures,
    changed, notes, report}. SIMULATOR_MODELS ({engine: [flags]}, a simulated fleet's): a note per
    variant with settings the simulator does not model (unmodelled.py)."""
    recs = _records(experiment, json.loads(json.dumps(records_by_host or {})))
    names = [v["name"] for v in experiment["variants"]]
    report = _compare.compare(_groups(experiment, recs), title, experiment["reference"], names, named=names,
                              category_level=experiment.get("category_level"))
    rows = gate_rows(experiment, recs)
    report["failures"] = failures(experiment, recs, _nodes_of(json.loads(json.dumps(records_by_host or {}))))
    report["gates"] = rows
    report["gate_failures"] = [_gates.failure_text(r["host"], r["variant"], r) for r in rows if not r["passed"]]
    report["experiment"] = {k: experiment[k] for k in ("name", "file", "checksum", "reference", "spread",
                                                       "assignments")}
    report["notes"] = list(report.get("notes") or []) + _unmodelled.notes(experiment, simulator_models)
    report["notes"] += topology_notes(recs, every=any(v["server"].get("nodes") for v in experiment["variants"]))
    report["topology"] = {host: {n: r["topology"] for n, r in by_name.items() if r.get("topology")}
                          for host, by_name in recs.items()}
    out = write_report(report, dest_dir, BASENAME, _markdown(experiment, rows), render_png, check_mode=check_mode)
    out["lines"] = _lines(report, rows, experiment["spread"]) + _compare.category_warning_lines(report)
    out["failures"] = list(report["failures"])
    out["gate_failures"] = list(report["gate_failures"])
    return out


EXPERIMENT_KEYS = ("name", "file", "checksum", "reference", "spread", "variants", "assignments")


def from_results(experiment, results_dir, dest_dir, title="", check_mode=False, simulator_models=None):
    """build() over the records under RESULTS_DIR whose settings are the experiment's; records of
    changed settings are left out with a note. Title: 'Experiment NAME' unless given."""
    missing = [k for k in EXPERIMENT_KEYS if k not in (experiment or {})]
    if missing:
        raise InvalidInput("experiment lacks %s: pass the whole result of gpufleet.serving.experiment_plan"
                           % ", ".join(missing))
    found = store.scan(results_dir, experiment)
    out = build(experiment, found["recorded"], dest_dir, title or "Experiment %s" % experiment["name"],
                check_mode=check_mode, simulator_models=simulator_models)
    out["notes"] += found["problems"] + ["%s %s: recorded with other settings, left out (run the experiment "
                                         "again to measure it)" % (host, name)
                                         for host, names in found["stale"].items() for name in names]
    return out
