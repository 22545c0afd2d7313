# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine comparison (plugin_utils/_report/compare.py): figures, ratio definitions,
failures, the fleet sums, the Markdown, the PNG and the files."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.repeats import combine
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare as rc
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare_plot as rcp
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import files as rf


def lv(c, tps, ttft, tpot, itl, accept=None):
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": ttft, "p99": ttft * 2},
            "tpot_ms": {"p50": tpot, "p99": tpot * 2}, "itl_ms": {"p50": itl, "p99": itl * 2},
            "accept_length": accept, "completed": 8, "failed": 0}


def bench(*levels):
    return {"changed": False, "levels": list(levels)}


TEARDOWN = {"gpus_selected": 8, "gpus_free": 8, "gpus_used": [], "killed": 0, "seconds": 0.4}


def rec(variant, *levels, outcome="ok", **more):
    out = {"variant": variant, "outcome": outcome, "teardown": TEARDOWN}
    if levels:
        out["bench"] = bench(*levels)
    out.update(more)
    return out


# The seeds' figures (Kimi-K2.5 INT4 TP8): SGLang 63.6 / 2370 tok/s, vLLM 82.5 / 1536.
H1 = [rec("sglang", lv(1, 63.6, 100.0, 15.7, 15.7), lv(128, 2370.0, 900.0, 50.0, 50.0)),
      rec("vllm", lv(1, 82.5, 80.0, 12.1, 12.1), lv(128, 1536.0, 700.0, 80.0, 80.0)),
      rec("sglang+eagle3", lv(1, 95.4, 110.0, 10.5, 10.5, 3.1), lv(128, 2133.0, 950.0, 60.0, 60.0, 2.9)),
      rec("vllm+eagle3", lv(1, 54.5, 90.0, 18.3, 18.3, 1.15), lv(128, 1014.0, 800.0, 120.0, 120.0, 1.15))]
H2 = [rec("sglang", lv(1, 64.0, 100.0, 15.6, 15.6), lv(128, 2380.0, 900.0, 50.0, 50.0)),
      rec("vllm", outcome="failed", stage="wait", reason="Wait until ready: vllm-8000: the server exited"),
      rec("sglang+eagle3", outcome="skipped", stage="skipped",
          reason="GPUs not verified free after vllm"),
      rec("vllm+eagle3", outcome="skipped", stage="skipped", reason="GPUs not verified free after vllm")]


def test_ratio_definitions():
    report = rc.compare({"h1": H1}, "T")
    h1 = report["hosts"]["h1"]
    # Against base SGLang on the same host: the variant's figure divided by the reference's.
    assert h1["vllm"]["ratio"] == {"single_stream": round(82.5 / 63.6, 3), "peak": round(1536.0 / 2370.0, 3),
                                   "tpot": round(12.1 / 15.7, 3)}
    assert h1["sglang"]["ratio"] == {"single_stream": 1.0, "peak": 1.0, "tpot": 1.0}
    assert h1["vllm+eagle3"]["ratio"]["peak"] == round(1014.0 / 2370.0, 3)
    # Another reference: the same definition with vLLM as the divisor.
    by_vllm = rc.compare({"h1": H1}, "T", reference="vllm")["hosts"]["h1"]
    assert by_vllm["vllm+eagle3"]["ratio"]["single_stream"] == round(54.5 / 82.5, 3)
    assert by_vllm["vllm"]["ratio"]["peak"] == 1.0


def test_ratios_are_null_without_a_figure():
    assert rc.ratios(None, {"single_stream_tok_s": 1.0}) == {"single_stream": None, "peak": None, "tpot": None}
    fig, ref = {"single_stream_tok_s": 2.0, "peak_tok_s": 3.0}, {"single_stream_tok_s": 0.0, "peak_tok_s": 1.5}
    assert rc.ratios(fig, ref) == {"single_stream": None, "peak": 2.0, "tpot": None}


def test_figures_per_variant():
    fig = rc.compare({"h1": H1})["hosts"]["h1"]
    assert fig["sglang"]["figures"] == {
        "single_stream_tok_s": 63.6, "peak_tok_s": 2370.0, "peak_concurrency": 128,
        "ttft_p50_at_1_ms": 100.0, "ttft_p50_at_peak_ms": 900.0, "tpot_p50_at_1_ms": 15.7,
        "tpot_p50_at_peak_ms": 50.0, "itl_p50_at_1_ms": 15.7, "accept_length": None, "failed_requests": 0}
    assert fig["sglang+eagle3"]["figures"]["accept_length"] == 3.0  # mean over the levels
    assert fig["vllm+eagle3"]["engine"] == "vllm" and fig["vllm+eagle3"]["speculative"] is True
    assert fig["vllm"]["engine"] == "vllm" and fig["vllm"]["speculative"] is False


def test_failures_and_fleet_ratios_need_the_same_hosts():
    report = rc.compare({"h1": H1, "h2": H2}, "T")
    assert report["failures"] == [
        "h2 vllm: FAILED at stage wait: Wait until ready: vllm-8000: the server exited",
        "h2 sglang+eagle3: SKIPPED at stage skipped: GPUs not verified free after vllm",
        "h2 vllm+eagle3: SKIPPED at stage skipped: GPUs not verified free after vllm"]
    fleet = report["fleet"]
    assert fleet["sglang"]["hosts"] == ["h1", "h2"]
    assert fleet["sglang"]["figures"]["single_stream_tok_s"] == 127.6
    assert fleet["sglang"]["ratio"]["single_stream"] == 1.0
    # vLLM was measured on h1 only: its fleet sum is h1's, and no fleet ratio is made.
    assert fleet["vllm"]["hosts"] == ["h1"] and fleet["vllm"]["figures"]["peak_tok_s"] == 1536.0
    assert fleet["vllm"]["ratio"] == {"single_stream": None, "peak": None, "tpot": None}
    assert any("fleet vllm: measured on h1, sglang on h1, h2" in n for n in report["notes"])
    assert report["hosts"]["h2"]["vllm"]["summary"] is None


def test_order_and_bad_input():
    report = rc.compare({"h1": H1[:2]}, variants=["vllm", "sglang"])
    assert report["variants"] == ["vllm", "sglang"]
    with pytest.raises(InvalidInput, match="unknown variant 'trt'"):
        rc.compare({"h1": [rec("trt", lv(1, 1.0, 1.0, 1.0, 1.0))]})
    with pytest.raises(InvalidInput, match="reference sglang is not one of the variants"):
        rc.compare({"h1": H1[1:2]})
    with pytest.raises(InvalidInput, match="variant vllm twice"):
        rc.compare({"h1": H1[:2] + H1[1:2]})
    with pytest.raises(InvalidInput, match="records is empty"):
        rc.compare({})
    # An ok record without levels is a failure, with a note.
    report = rc.compare({"h1": [H1[0], {"variant": "vllm", "outcome": "ok", "bench": {"failed": True}}]})
    assert report["hosts"]["h1"]["vllm"]["outcome"] == "failed"
    assert "h1 vllm: no benchmark levels in an ok record" in report["notes"]


def table_rows(md, first_cell):
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in md.splitlines() if line.startswith("| %s " % first_cell)]


def test_markdown_and_lines():
    report = rc.compare({"h1": H1, "h2": H2}, "Kimi")
    md = rc.render(report, plot_name="compare.png")
    assert md.startswith("# Kimi\n")
    rows = {r[1]: r for r in table_rows(md, "h1")}
    assert rows["vllm"] == ["h1", "vllm", "ok", "82.5", "1.30x", "1536.0 (128)", "0.65x", "80.0 / 700.0",
                            "12.1 / 80.0", "0.77x", "12.1", "-", "8/8"]
    assert rows["vllm+eagle3"][-2] == "1.15"
    h2 = {r[1]: r for r in table_rows(md, "h2")}
    assert h2["vllm"][2] == "failed" and h2["vllm"][3] == "-"
    # Fleet tok/s by concurrency, one column per variant and the ratios to sglang.
    assert table_rows(md, "128")[0][:5] == ["128", "4750.0", "1536.0", "2133.0", "1014.0"]
    assert "## h1: latency by level" in md and "| 128 | vllm+eagle3 | 1014.0 |" in md
    assert "- h2 vllm: FAILED at stage wait" in md
    lines = rc.host_lines(report)
    assert lines[1] == ("h1 vllm: ok, single-stream 82.5 tok/s (1.30x), peak 1536.0 tok/s (0.65x), "
                        "accept length -; GPUs free after teardown: 8/8")
    assert lines[5].startswith("h2 vllm: FAILED at stage wait: Wait until ready")


def runs(c, *tok_s):
    """One level measured once per value of TOK_S (llm_benchmark's repeats)."""
    return combine([lv(c, t, 100.0, 15.0, 15.0) for t in tok_s])


def test_significance_in_words_per_variant_against_the_reference():
    # sglang 63, 64, 65: mean 64, s 1, t(0.975, 2) 4.303: 64 +- 2.484 = [61.5, 66.5]
    records = {"h1": [rec("sglang", runs(1, 63.0, 64.0, 65.0)),
                      rec("vllm", runs(1, 80.0, 82.0, 84.0)),  # 82 +- 4.968: [77.0, 87.0]
                      rec("sglang+eagle3", runs(1, 55.0, 65.0, 75.0))]}  # 65 +- 24.84: overlaps
    md = rc.render(rc.compare(records))
    assert "## h1: speed-up against sglang, significance" in md
    words = [x for x in md.splitlines() if x.startswith("- concurrency 1: ")]
    assert words == [
        "- concurrency 1: vllm/sglang 1.28x, tok/s 82.0 [77.0, 87.0] vs 64.0 [61.5, 66.5] (mean [95% interval] "
        "of 3 and 3 runs): significant: the 95% intervals do not overlap, so vllm is faster than sglang here.",
        "- concurrency 1: sglang+eagle3/sglang 1.02x, tok/s 65.0 [40.2, 89.8] vs 64.0 [61.5, 66.5] (mean [95% "
        "interval] of 3 and 3 runs): not significant at 95%: the intervals overlap, so these runs do not show "
        "a difference."]


def test_one_run_has_no_interval():
    md = rc.render(rc.compare({"h1": H1}))
    assert "- vllm/sglang: one run, no interval (repeats: 1), so no level's speed-up is tested." in md
    assert "- vllm+eagle3/sglang: one run, no interval" in md
    assert "significant" not in md


def test_png_and_files(tmp_path):
    report = rc.compare({"h1": H1, "h2": H2}, "T")
    png = rcp.render_png(report)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png == rcp.render_png(report)
    out = rf.build_comparison({"h1": H1}, str(tmp_path / "r"), "T")
    assert out["changed"] is True and out["failures"] == []
    assert json.loads((tmp_path / "r" / "compare.json").read_text())["variants"] == \
        ["sglang", "vllm", "sglang+eagle3", "vllm+eagle3"]
    assert (tmp_path / "r" / "compare.md").read_text() == out["markdown"]
    assert (tmp_path / "r" / "compare.png").is_file()
    assert rf.build_comparison({"h1": H1}, str(tmp_path / "r"), "T")["changed"] is False


def test_a_variant_without_a_record_is_reported():
    report = rc.compare({"h1": H1[:2], "h2": H2[:1]}, variants=["sglang", "vllm"])
    assert "h2 vllm: NO RESULT, the host left the play before this variant (see above)" in report["failures"]
    assert "h2 vllm: NO RESULT" in rc.host_lines(report)[-1]
    assert table_rows(rc.render(report), "h2")[1][:4] == ["h2", "vllm", "no result", "-"]
    # The accept source of each variant, from the llm_benchmark levels.
    levels = [dict(lv(1, 90.0, 1.0, 1.0, 1.0, 2.5), accept_source="metrics")]
    out = rc.compare({"h1": [H1[0], rec("vllm+eagle3", *levels)]})
    assert out["hosts"]["h1"]["vllm+eagle3"]["accept_sources"] == ["metrics"]
    assert out["hosts"]["h1"]["sglang"]["accept_sources"] == []


def test_category_warnings_become_the_plays_lines():
    report = {"categories": {"h2": {"warnings": ["WARNING: b"]}, "h1": {"warnings": ["WARNING: a"]}, "h3": None}}
    assert rc.category_warning_lines(report) == ["h1: WARNING: a", "h2: WARNING: b"]
    assert rc.category_warning_lines({}) == []
