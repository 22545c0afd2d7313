# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The reports name the workload, compare it per category, and warn about random prompts."""

from __future__ import annotations

import pytest
from matplotlib.colors import to_hex

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare as rc
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare_plot as rcp
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import html_report, swap
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import markdown as rmd
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge as rm
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import plot as rp
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl

FILE = {"source": "file", "name": None, "path": "/data/mt.jsonl", "format": "mtbench", "sha256": "ab12",
        "seed": 7, "sample": 40, "available": 80, "categories_filter": None,
        "categories": {"code": 20, "writing": 20}, "multi_turn_items": 40, "output_len_mode": "fixed"}


def cat(tokens, ttft, tpot, accept=None, requests=4):
    return {"requests": requests, "completed": requests, "failed": 0, "output_tokens": tokens,
            "ttft_ms": {"p50": ttft}, "tpot_ms": {"p50": tpot}, "latency_ms": {"p50": ttft + 100 * tpot},
            "accept_length": accept}


def lv(c, tps, categories=None, accept=None):
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": 10.0, "p99": 20.0},
            "accept_length": accept, "completed": 8, "failed": 0, "categories": categories}


def bench(*levels, workload="file"):
    accepts = [x["accept_length"] for x in levels if x["accept_length"] is not None]
    out = {"levels": list(levels), "summary": {"accept_length": sum(accepts) / len(accepts) if accepts else None}}
    if workload is not None:
        out["workload"] = FILE if workload == "file" else workload
    return out


BASE = bench(lv(1, 60.0, {"code": cat(100, 30.0, 20.0), "writing": cat(100, 32.0, 20.0)}),
             lv(16, 600.0, {"code": cat(300, 90.0, 40.0), "writing": cat(300, 95.0, 40.0)}))
EAGLE = bench(lv(1, 120.0, {"code": cat(100, 28.0, 5.0, 4.0), "writing": cat(100, 30.0, 10.0, 2.0)}, 3.0),
              lv(16, 900.0, {"code": cat(300, 80.0, 16.0, 3.0), "writing": cat(300, 85.0, 25.0, 2.0)}, 2.5))


def test_pooled_acceptance_and_speedup_by_hand():
    # code: 100 tokens at 4.0 (25 steps) and 300 at 3.0 (100 steps): 400 / 125 = 3.2
    assert wl.pooled_accept(EAGLE["levels"], "code") == 3.2
    table = wl.categories([("base", BASE["levels"]), ("eagle", EAGLE["levels"])], "base")
    assert table["concurrency"] == 1
    code = table["variants"]["eagle"]["code"]
    assert code["speedup"] == 4.0  # TPOT p50 20 ms over 5 ms
    assert table["variants"]["eagle"]["writing"]["speedup"] == 2.0
    assert table["variants"]["base"]["code"]["speedup"] is None
    assert table["variants"]["base"]["code"]["accept_length"] is None


def test_the_compared_level_is_common_to_every_side():
    only16 = bench(EAGLE["levels"][1])
    table = wl.categories([("base", BASE["levels"]), ("eagle", only16["levels"])], "base")
    assert table["concurrency"] == 16
    assert table["variants"]["eagle"]["code"]["speedup"] == 2.5  # 40 / 16
    assert wl.categories([("base", [lv(1, 60.0)]), ("eagle", [lv(1, 90.0)])], "base") is None


def test_category_level_chooses_the_level_and_warns_when_it_was_not_measured():
    named = [("base", BASE["levels"]), ("eagle", EAGLE["levels"])]
    assert wl.categories(named, "base", level=16)["concurrency"] == 16
    table = wl.categories(named, "base", level=8)
    assert table["concurrency"] == 1
    assert table["warnings"][0].startswith("WARNING: category_level 8 has no per-category figures on every side")
    assert wl.categories(named, "base", level=16, min_requests=4)["warnings"] == []


def test_a_category_missing_at_the_compared_level_is_named():
    # math ran at 16 only (too few requests at 1 drew none of it).
    levels = [lv(1, 60.0, {"code": cat(100, 30.0, 20.0)}),
              lv(16, 600.0, {"code": cat(300, 90.0, 40.0), "math": cat(300, 95.0, 40.0)})]
    table = wl.categories([("base", levels), ("eagle", levels)], "base", min_requests=1)
    assert table["warnings"] == ["WARNING: no request at concurrency 1 in math (measured at another level): choose a "
                                 "level where every category ran (category_level) or raise requests_per_level"]


@pytest.mark.parametrize("info, text", [
    (FILE, "file /data/mt.jsonl (mtbench, sha256 ab12), 40 of 80 items, seed 7, 40 multi-turn, output length fixed"),
    ({"source": "builtin", "name": "builtin-v1", "sample": 80, "available": 80, "seed": 0},
     "built-in set builtin-v1, 80 items, seed 0, output length fixed"),
    ({"source": "random"}, "random prompts (no categories)"),
    ({"source": "random", "goodput_slos": {"slo_ttft_ms": 2000, "slo_e2e_ms": 30000.5}},
     "random prompts (no categories); goodput SLOs: TTFT ≤ 2000 ms, E2E latency ≤ 30000.5 ms"),
])
def test_workload_text(info, text):
    assert wl.workload_text(info) == text


def test_swap_report_names_the_workload_and_compares_categories():
    md = rmd.render(rm.merge({"gpu01": {"baseline": BASE, "candidate": EAGLE}}, "T", "sglang", "eagle3"))
    assert "- gpu01 sglang, gpu01 eagle3: file /data/mt.jsonl (mtbench, sha256 ab12), 40 of 80 items, seed 7" in md
    # Four requests a category: said once, above the table, naming each.
    assert md.count("WARNING") == 1 and "WARNING: fewer than 10 requests at concurrency 1 in code (4), writing (4)" in md
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith("| code ")]
    assert rows == [["code", "4", "-", "3.20", "30.0 / 20.0", "28.0 / 5.0", "4.00x"]]


def test_both_reports_and_their_html_say_which_goodput_slos_were_used():
    slos = {"slo_ttft_ms": 2000, "slo_tpot_ms": 50, "slo_e2e_ms": None}
    base, eagle = dict(BASE, config=slos), dict(EAGLE, config=slos)
    assert wl.describe(base)["goodput_slos"] == {"slo_ttft_ms": 2000, "slo_tpot_ms": 50}
    assert "goodput_slos" not in wl.describe(BASE)  # no SLO: no goodput, nothing to say
    said = "goodput SLOs: TTFT ≤ 2000 ms, TPOT ≤ 50 ms"
    swap_md = rmd.render(rm.merge({"gpu01": {"baseline": base, "candidate": eagle}}, "T", "sglang", "eagle3"))
    experiment_md = rc.render(rc.compare({"gpu01": [{"variant": "sglang", "outcome": "ok", "bench": base},
                                                    {"variant": "sglang+eagle3", "outcome": "ok", "bench": eagle}]}))
    for md in (swap_md, experiment_md):
        assert "- gpu01 sglang, gpu01 sglang+eagle3: " in md or "- gpu01 sglang, gpu01 eagle3: " in md, md
        assert said in md, md
        assert said in html_report.render("T", md)
    assert said not in rmd.render(rm.merge({"gpu01": {"baseline": BASE, "candidate": EAGLE}}))


def test_random_acceptance_is_warned_about_in_both_reports_and_lines():
    base, eagle = bench(lv(1, 60.0), workload=None), bench(lv(1, 90.0, accept=2.5), workload=None)
    md = rmd.render(rm.merge({"gpu01": {"baseline": base, "candidate": eagle}}))
    assert "**%s**" % wl.RANDOM_WARNING in md
    assert "by category" not in md
    report = rc.compare({"gpu01": [{"variant": "sglang", "outcome": "ok", "bench": base},
                                   {"variant": "sglang+eagle3", "outcome": "ok", "bench": eagle}]})
    assert "**%s**" % wl.RANDOM_WARNING in rc.render(report)
    lines = rc.host_lines(report)
    assert wl.RANDOM_LINE in lines[1] and wl.RANDOM_LINE not in lines[0]
    record = swap.swap_record({"baseline": base, "candidate": eagle}, "gpu01")
    assert record["line"].endswith(wl.RANDOM_LINE)
    real = swap.swap_record({"baseline": BASE, "candidate": EAGLE}, "gpu01")
    assert wl.RANDOM_LINE not in real["line"]


def test_compare_report_has_a_category_table_per_host():
    report = rc.compare({"gpu01": [{"variant": "sglang", "outcome": "ok", "bench": BASE},
                                   {"variant": "sglang+eagle3", "outcome": "ok", "bench": EAGLE}]})
    md = rc.render(report)
    assert "## gpu01: by category" in md
    assert "| writing | 4 | - | 2.00 | 32.0 / 20.0 | 30.0 / 10.0 | 2.00x |" in md
    assert report["categories"]["gpu01"]["concurrency"] == 1


def alone(fig, tok_s, accept=None):
    """A category's figures with its own pass (llm_benchmark category_passes): tok/s, and where
    ACCEPT is given, the acceptance from the counters around the pass (vLLM)."""
    out = dict(fig, output_tok_s=tok_s, output_tok_s_source="pass", own_pass={"level_output_tokens": 2 * fig["output_tokens"]})
    if accept is not None:
        out.update(accept_length=accept, accept_source="pass_metrics")
    return out


def test_category_passes_give_tok_s_and_its_ratio_in_both_reports():
    base = bench(lv(1, 60.0, {"code": alone(cat(100, 30.0, 20.0), 50.0), "writing": alone(cat(100, 32.0, 20.0), 48.0)}))
    # vLLM-like: acceptance only from each pass's counters; 3.0 at 1, 2.0 at 16 over twice the tokens.
    eagle = bench(lv(1, 120.0, {"code": alone(cat(100, 28.0, 5.0), 125.0, 3.0),
                                "writing": alone(cat(100, 30.0, 10.0), 72.0, 2.0)}, 2.5),
                  lv(16, 900.0, {"code": alone(cat(200, 80.0, 16.0), 800.0, 2.0)}, 2.2))
    # code: 200 own-pass tokens at 3.0 (66.7 steps) and 400 at 2.0 (200 steps): 600 / 266.7 = 2.25
    assert wl.pooled_accept(eagle["levels"], "code") == 2.25
    md = rmd.render(rm.merge({"gpu01": {"baseline": base, "candidate": eagle}}, "T", "sglang", "eagle3"))
    assert "| category | requests | sglang accept len | eagle3 accept len |" in md
    assert "sglang tok/s | eagle3 tok/s | eagle3 tok/s x sglang ↑ |" in md
    assert "| code | 4 | - | 2.25* | 30.0 / 20.0 | 28.0 / 5.0 | 4.00x | 50.0 | 125.0 | 2.50x |" in md
    assert "| writing | 4 | - | 2.00* | 32.0 / 20.0 | 30.0 / 10.0 | 2.00x | 48.0 | 72.0 | 1.50x |" in md
    assert "Acceptance marked * is from the server's counters around the category's own pass" in md
    assert "tok/s: each category's own pass at that concurrency" in md
    report = rc.compare({"gpu01": [{"variant": "sglang", "outcome": "ok", "bench": base},
                                   {"variant": "vllm+eagle3", "outcome": "ok", "bench": eagle}]})
    assert report["categories"]["gpu01"]["variants"]["vllm+eagle3"]["code"]["tok_s_ratio"] == 2.5
    assert "| code | 4 | - | 2.25* | 30.0 / 20.0 | 28.0 / 5.0 | 4.00x | 50.0 | 125.0 | 2.50x |" in rc.render(report)
    # Without passes the table has no tok/s column and says why.
    plain = rmd.render(rm.merge({"gpu01": {"baseline": BASE, "candidate": EAGLE}}))
    assert "tok/s is not split by category" in plain and "tok/s x" not in plain and "*" not in plain.split("by category")[1]


def test_a_failed_reference_leaves_the_table_without_it():
    report = rc.compare({"gpu01": [{"variant": "sglang", "outcome": "failed", "stage": "launch", "reason": "exit 2"},
                                   {"variant": "sglang+eagle3", "outcome": "ok", "bench": EAGLE}]})
    md = rc.render(report)
    assert "| code | 4 | 3.20 | 28.0 / 5.0 |" in md


def _png_height(png):
    return int.from_bytes(png[20:24], "big")  # the IHDR chunk's height


def test_both_plots_get_a_category_panel_only_with_categories():
    with_cats = rm.merge({"gpu01": {"baseline": BASE, "candidate": EAGLE}})
    without = rm.merge({"gpu01": {"baseline": bench(lv(1, 60.0)), "candidate": bench(lv(1, 90.0, accept=2.5))}})
    assert _png_height(rp.render_png(with_cats)) == 1350 and _png_height(rp.render_png(without)) == 900
    report = rc.compare({"gpu01": [{"variant": "sglang", "outcome": "ok", "bench": BASE},
                                   {"variant": "sglang+eagle3", "outcome": "ok", "bench": EAGLE}]})
    assert _png_height(rcp.render_png(report)) == 1350
    # The bars have the variant's colour of the other panels (its markers in the first one).
    fig = rcp.build_figure(report)
    marker = next(line.get_color() for line in fig.axes[1].get_lines() if "sglang+eagle3" in (line.get_gid() or ""))
    assert {to_hex(patch.get_facecolor()) for patch in fig.axes[4].patches} == {to_hex(marker)}
