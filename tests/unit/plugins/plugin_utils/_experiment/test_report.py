# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The experiment's report (plugin_utils/_experiment/report.py): three files, ratios against the
reference per host or over the spread group, a gates table, what did not complete."""

from __future__ import annotations

import json
import re

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import load as ld
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import report as rp
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import axes_style
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare as rcmp
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare_plot as rcp


def _records(exp, kit, host_of):
    """Seed-like figures: EAGLE-3 1.5x single-stream, the other engine 1.3x; the other fails a gate."""
    figures = {"base": (63.6, None, 900.0), "eagle/3": (95.4, 3.1, 950.0), "other": (82.5, None, 2400.0)}
    out = {}
    for name, (tok, accept, ttft) in figures.items():
        host = host_of(name)
        out.setdefault(host, {})[name] = kit.record(exp, host, name, kit.level(1, tok, accept=accept),
                                                    kit.level(64, tok * 20, ttft_p99=ttft, accept=accept))
    return out


def test_report_writes_four_files_with_the_gates(experiment, kit, tmp_path):
    exp = experiment(hosts=("h1", "h2"))
    recs = _records(exp, kit, lambda name: "h1")
    recs["h2"] = {"base": kit.record(exp, "h2", "base", outcome="failed", stage="wait", reason="exited")}
    out = rp.build(exp, recs, str(tmp_path / "rep"), "T")
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == ["experiment.html", "experiment.json",
                                                                    "experiment.md", "experiment.png"]
    assert out["html_path"] == str(tmp_path / "rep" / "experiment.html")
    data = json.loads((tmp_path / "rep" / "experiment.json").read_text())
    assert data["hosts"]["h1"]["eagle/3"]["ratio"]["single_stream"] == round(95.4 / 63.6, 3)
    assert data["hosts"]["h1"]["eagle/3"]["engine"] == exp["variants"][1]["engine"]
    assert out["gate_failures"] == [
        "h1 other: max_ttft_p99_ms value 2400.0, limit 2000 (highest TTFT p99 at concurrency 64)"]
    assert data["gate_failures"] == out["gate_failures"]
    rows = {(g["variant"], g["gate"], g["level"]): g["passed"] for g in data["gates"]}
    assert rows[("eagle/3", "min_acceptance_length", None)] is True
    assert rows[("eagle/3", "min_speedup", 1)] is True and ("base", "min_speedup", 1) not in rows
    assert out["failures"] == [
        "h2 base: FAILED at stage wait: exited",
        "h2 eagle/3: " + rp.NOT_RECORDED, "h2 other: " + rp.NOT_RECORDED]
    md = out["markdown"]
    assert rp.GATES_HEAD in md and "| h1 | other | max_ttft_p99_ms | 2000 | 2400 | **FAIL** |" in md
    assert "| h1 | eagle/3 | min_speedup | 1.2 at 1 | 1.5 | pass |" in md
    assert out["lines"][2].startswith("h1 other: ok") and "gates FAILED: max_ttft_p99_ms" in out["lines"][2]
    again = rp.build(exp, recs, str(tmp_path / "rep"), "T")
    assert again["changed"] is False


def test_spread_compares_each_variant_with_the_reference_wherever_it_ran(experiment, kit, tmp_path):
    exp = experiment(spread=True, hosts=("h1", "h2"))
    assert exp["assignments"] == {"h1": ["base", "other"], "h2": ["eagle/3"]}
    recs = _records(exp, kit, lambda name: "h2" if name == "eagle/3" else "h1")
    out = rp.build(exp, recs, str(tmp_path / "rep"), "T", check_mode=True)
    group = rp.spread_label(exp)
    assert group == "fleet (spread over 2 hosts)" and list(out["report"]["hosts"]) == [group]
    assert out["report"]["hosts"][group]["eagle/3"]["ratio"]["single_stream"] == round(95.4 / 63.6, 3)
    speedup = next(g for g in out["report"]["gates"] if g["gate"] == "min_speedup" and g["variant"] == "eagle/3")
    assert speedup["host"] == "h2" and speedup["value"] == 1.5
    assert out["failures"] == [] and not (tmp_path / "rep").exists()
    assert [line.split(":")[0] for line in out["lines"]] == [group + " " + n for n in ("base", "eagle/3", "other")]


def test_each_variant_of_an_experiment_gets_its_own_colour(experiment, kit, tmp_path):
    exp = experiment()
    out = rp.build(exp, _records(exp, kit, lambda name: "h1"), str(tmp_path / "rep"), "T", check_mode=True)
    drawn = rcp.series(out["report"])
    colours = axes_style.colours(out["report"]["variants"])
    assert {s["key"] for s in drawn} == {"base", "eagle/3", "other"} and len(set(colours.values())) == 3


def test_a_record_naming_an_unknown_engine_is_refused():
    rec = {"variant": "any name", "engine": "tgi", "outcome": "ok"}
    with pytest.raises(InvalidInput, match="variant any name: unknown engine 'tgi'; known engines: "):
        rcmp.compare({"h1": [rec]}, reference="any name")


# The last but one would be read as a formula by matplotlib, and fail the plot.
HOSTILE = ["a|b", "<b>bold</b>", "[l](http://e)", "$\\nope$ $x^2$", "**x**"]


def test_names_are_shown_as_text_and_kept_exact_in_the_json(kit, tmp_path):
    engine = registry.names()[0]
    text = "reference: '%s'\ngates: {max_failed_requests: 0}\nvariants:\n" % HOSTILE[0] + "".join(
        "  - {name: '%s', engine: %s}\n" % (name, engine) for name in HOSTILE)
    (tmp_path / "x.experiment.yml").write_text(text)
    host = "h|1 <i>"
    exp = ld.load(tmp_path / "x.experiment.yml", [host])
    recs = {host: {name: kit.record(exp, host, name, kit.level(1, 60.0), kit.level(64, 900.0))
                   for name in HOSTILE[:-1]}}
    recs[host][HOSTILE[-1]] = kit.record(exp, host, HOSTILE[-1], outcome="failed", stage="wait",
                                         reason="<script>x</script> | exited")
    out = rp.build(exp, recs, str(tmp_path / "rep"), "T | <h1>")
    md = out["markdown"]
    for raw in ("<b>", "<i>", "<script>", "<h1>", "**x**", "[l](http"):
        assert raw not in md, raw
    table = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            table.append(len(re.split(r"(?<!\\)\|", line)))
        elif table:
            assert len(set(table)) == 1, md
            table = []
    page = (tmp_path / "rep" / "experiment.html").read_text()
    for raw in ("<b>", "<i>", "<script>", "<a "):  # names are text, never markup, in the HTML too
        assert raw not in page, raw
    assert "**x**" in page and "&lt;b&gt;bold&lt;/b&gt;" in page and "[l](http://e)" in page
    assert page.count("<h1>") == 1 and "<h1>T | &lt;h1&gt;</h1>" in page and "h|1 &lt;i&gt;" in page and "&lt;script&gt;x&lt;/script&gt; | exited" in page
    data = json.loads((tmp_path / "rep" / "experiment.json").read_text())
    assert sorted(data["hosts"][host]) == sorted(HOSTILE) and data["reference"] == HOSTILE[0]


def test_a_group_is_reported_at_rank_0_with_its_topology(kit, tmp_path):
    path = tmp_path / "topo.experiment.yml"
    path.write_text("reference: tp8\nvariants:\n"
                    "  - {name: tp8, engine: sglang, server: {nodes: [h1], tp_size: 8}}\n"
                    "  - {name: tp16, engine: sglang, server: {nodes: [h1, h2], tp_size: 16}}\n")
    exp = ld.load(path, ["h1", "h2"])
    recs = {"h1": {"tp8": dict(kit.record(exp, "h1", "tp8", kit.level(1, 60.0)),
                               topology={"nodes": ["h1"], "nnodes": 1, "tp_size": 8}),
                   "tp16": dict(kit.record(exp, "h1", "tp16", kit.level(1, 90.0)),
                                topology={"nodes": ["h1", "h2"], "nnodes": 2, "tp_size": 16, "pp_size": 2, "dp_size": 1})},
            "h2": {"tp16": dict(kit.record(exp, "h2", "tp16"), bench={}, measured_at="h1")}}
    out = rp.build(exp, recs, str(tmp_path / "rep"), "T")
    data = json.loads((tmp_path / "rep" / "experiment.json").read_text())
    assert out["failures"] == [] and list(data["hosts"]) == ["h1"]
    assert data["hosts"]["h1"]["tp16"]["ratio"]["single_stream"] == 1.5
    assert data["topology"] == {"h1": {"tp8": {"nodes": ["h1"], "nnodes": 1, "tp_size": 8},
                                       "tp16": {"nodes": ["h1", "h2"], "nnodes": 2, "tp_size": 16, "pp_size": 2, "dp_size": 1}},
                                "h2": {}}
    assert "h1 tp8: TP8 on h1 (nnodes 1)" in data["notes"]
    # sizes above 1 are named beside TP
    assert "h1 tp16: TP16 PP2 on h1, h2 (nnodes 2), measured at rank 0" in data["notes"]
