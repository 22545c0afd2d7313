# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Gates (plugin_utils/_experiment/gates.py) on llm_benchmark-shaped records: each figure, pass and
fail at the limit, a missing figure fails, acceptance is not applicable without speculative settings."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import gates as gt


@pytest.fixture
def exp(experiment):
    return experiment()


def _one(entries, gate, level=None):
    return next(e for e in entries if e["gate"] == gate and e["level"] == level)


@pytest.mark.parametrize("tok_s, passed", [(76.32, True), (76.0, False)])
def test_min_speedup_against_the_reference_at_each_level(exp, kit, tok_s, passed):
    ref = kit.record(exp, "h1", "base", kit.level(1, 63.6), kit.level(64, 2370.0))
    mine = kit.record(exp, "h1", "other", kit.level(1, tok_s), kit.level(64, 1536.0))
    entry = _one(gt.evaluate(mine, ref, {"min_speedup": {"levels": [1], "value": 1.2}}, "base"), "min_speedup", 1)
    assert entry["value"] == round(tok_s / 63.6, 3) and entry["passed"] is passed and entry["limit"] == 1.2
    assert "63.6" in entry["detail"] and "base" in entry["detail"]


def test_min_speedup_without_levels_checks_every_common_level(exp, kit):
    ref = kit.record(exp, "h1", "base", kit.level(1, 60.0), kit.level(64, 2000.0))
    mine = kit.record(exp, "h1", "other", kit.level(1, 90.0), kit.level(64, 1000.0))
    entries = gt.evaluate(mine, ref, {"min_speedup": 1.2})
    assert [(e["level"], e["passed"]) for e in entries] == [(1, True), (64, False)]


def test_a_missing_reference_fails_the_speedup(exp, kit):
    mine = kit.record(exp, "h1", "other", kit.level(1, 90.0))
    failed = kit.record(exp, "h1", "base", outcome="failed", stage="wait")
    for ref in (None, failed):
        entry = gt.evaluate(mine, ref, {"min_speedup": 1.2}, "base")[0]
        assert entry["passed"] is False and entry["value"] is None and "reference base" in entry["detail"]


@pytest.mark.parametrize("goods, limit, passed, value, level", [
    ((60, 48), 0.75, True, 0.75, 64),     # 48 of 64 at the worst level: exactly the limit passes
    ((60, 47), 0.75, False, 0.734, 64),
    ((None, None), 0.5, False, None, None),  # no SLO given: no goodput, the gate says why
])
def test_min_goodput_fraction_on_the_worst_level(exp, kit, goods, limit, passed, value, level):
    levels = [dict(kit.level(1, 63.6), goodput_requests=goods[0]), dict(kit.level(64, 2370.0), goodput_requests=goods[1])]
    entry = _one(gt.evaluate(kit.record(exp, "h1", "base", *levels), None, {"min_goodput_fraction": limit}),
                 "min_goodput_fraction", level)
    assert (entry["passed"], entry["value"]) == (passed, value), entry
    if value is None:
        assert "no SLO" in entry["detail"] and "slo_ttft_ms" in entry["detail"]
    else:
        assert "%d of 64 requests" % goods[1] in entry["detail"]
    (path, why), = gt.problems({"min_goodput_fraction": 1.5})
    assert path == ("min_goodput_fraction",) and "from 0 to 1" in why


def _cat(tokens, accept, ttft_p99, tpot_p99):
    return {"requests": 8, "output_tokens": tokens, "accept_length": accept,
            "ttft_ms": {"p50": ttft_p99 / 2, "p99": ttft_p99}, "tpot_ms": {"p50": tpot_p99 / 2, "p99": tpot_p99}}


def test_per_category_gates_on_each_categorys_figures(exp, kit):
    first = {"code": _cat(100, 4.0, 50.0, 8.0), "chat": _cat(100, 2.0, 60.0, 9.0)}
    levels = [dict(kit.level(1, 120.0, accept=3.0), categories=first),
              dict(kit.level(64, 2000.0, accept=2.5), categories={"code": _cat(300, 3.0, 400.0, 20.0)})]
    rec = kit.record(exp, "h1", "eagle/3", *levels, speculative=True)
    gates = {"per_category": {"code": {"min_acceptance_length": 3.3, "max_tpot_p99_ms": 25},
                              "math": {"max_ttft_p99_ms": 100}}}
    entries = {e["gate"]: e for e in gt.evaluate(rec, None, gates)}
    # code: 100 tokens at 4.0 (25 steps) and 300 at 3.0 (100 steps): 400 / 125 = 3.2, below 3.3.
    accept = entries["per_category.code.min_acceptance_length"]
    assert (accept["value"], accept["passed"]) == (3.2, False)
    tpot = entries["per_category.code.max_tpot_p99_ms"]
    assert (tpot["value"], tpot["passed"]) == (20.0, True) and "concurrency 64" in tpot["detail"]
    math = entries["per_category.math.max_ttft_p99_ms"]
    assert math["passed"] is False and "no request of category math" in math["detail"]


@pytest.mark.parametrize("limit, path, words", [
    ({"code": {"min_speedup": 2}}, ("per_category", "code", "min_speedup"), "unknown per-category gate"),
    ({"code": {"max_ttft_p99_ms": -1}}, ("per_category", "code", "max_ttft_p99_ms"), "0 or more"),
    ({"code": 3}, ("per_category", "code"), "mapping of gates"),
    ([], ("per_category",), "{CATEGORY: {GATE: LIMIT}}"),
])
def test_per_category_gates_refuse_bad_limits(limit, path, words):
    (got, why), = gt.problems({"per_category": limit})
    assert got == path and words in why


@pytest.mark.parametrize("value, limit, expected", [
    (682.376 / 682.502, 1, 0.9998),    # never "1": the limit it missed
    (1.23456, 1.2, 1.235),
    (2.0, 1, 2.0),
    (0.9999999999, 1, 0.9999999999),
    (123.45678, 100, 123.457),
    (99.99996, 50, 99.99996),          # not a round 100 it is not
])
def test_a_gate_value_shows_enough_digits(value, limit, expected):
    assert gt.shown(value, limit) == expected


@pytest.mark.parametrize("gate, limit, levels, value, passed", [
    ("max_ttft_p99_ms", 2000, [dict(conc=1, tok_s=60.0, ttft_p99=500.0), dict(conc=64, tok_s=900.0, ttft_p99=2100.0)],
     2100.0, False),
    ("max_ttft_p99_ms", 2100, [dict(conc=1, tok_s=60.0, ttft_p99=2100.0)], 2100.0, True),
    ("max_tpot_p99_ms", 50, [dict(conc=1, tok_s=60.0, tpot_p99=20.0), dict(conc=64, tok_s=900.0, tpot_p99=49.0)],
     49.0, True),
    ("max_failed_requests", 0, [dict(conc=1, tok_s=60.0, failed=1), dict(conc=64, tok_s=900.0, failed=2)], 3, False),
    ("max_failed_requests", 3, [dict(conc=1, tok_s=60.0, failed=1), dict(conc=64, tok_s=900.0, failed=2)], 3, True),
])
def test_limits_on_the_worst_level(exp, kit, gate, limit, levels, value, passed):
    mine = kit.record(exp, "h1", "other", *[kit.level(**lv) for lv in levels])
    entry = gt.evaluate(mine, None, {gate: limit})[0]
    assert (entry["gate"], entry["value"], entry["passed"]) == (gate, value, passed)


@pytest.mark.parametrize("name, accept, speculative, value, passed, words", [
    ("eagle/3", [2.6, 2.2], True, 2.4, True, "mean acceptance length"),
    ("eagle/3", [1.8, 1.9], True, 1.85, False, "mean acceptance length"),
    ("eagle/3", [None, None], True, None, False, "no acceptance length"),
    ("base", [None, None], False, None, True, "not applicable"),
])
def test_acceptance_length(exp, kit, name, accept, speculative, value, passed, words):
    mine = kit.record(exp, "h1", name, kit.level(1, 60.0, accept=accept[0]), kit.level(64, 900.0, accept=accept[1]),
                      speculative=speculative)
    entry = gt.evaluate(mine, None, {"min_acceptance_length": 2.0})[0]
    assert (entry["value"], entry["passed"]) == (value, passed) and words in entry["detail"]


def test_no_benchmark_fails_every_gate(exp, kit):
    mine = kit.record(exp, "h1", "other", outcome="failed", stage="wait")
    entries = gt.evaluate(mine, None, {"max_failed_requests": 0, "max_tpot_p99_ms": 50})
    assert [e["passed"] for e in entries] == [False, False]
    assert all("no benchmark result (failed)" in e["detail"] for e in entries)


def test_failure_text():
    entry = {"gate": "min_speedup", "level": 1, "limit": 1.2, "value": 0.9, "passed": False, "detail": "d"}
    assert gt.failure_text("h1", "ep8", entry) == "h1 ep8: min_speedup at concurrency 1 value 0.9, limit 1.2 (d)"


@pytest.mark.parametrize("gates, path", [
    ({"min_speedup": {"value": "x"}}, ("min_speedup", "value")),
    ({"min_speedup": {"value": 1.2, "levels": []}}, ("min_speedup", "levels")),
    ({"min_speedup": {"value": 1.2, "level": [1]}}, ("min_speedup", "level")),
    ({"max_tpot_p99_ms": "fast"}, ("max_tpot_p99_ms",)),
    ({"min_acceptance_length": True}, ("min_acceptance_length",)),
    ({"throttled": "no"}, ("throttled",)),
    ({"min_tokens_per_joule": -1}, ("min_tokens_per_joule",)),
])
def test_bad_limits(gates, path):
    assert [p for p, unused in gt.problems(gates)] == [path]


@pytest.mark.parametrize("gate, limit, speculative", [
    ("max_ttft_p99_ms", 2000, False), ("max_tpot_p99_ms", 100, False), ("min_acceptance_length", 1.5, True)])
def test_a_level_where_nothing_completed_fails_a_gate_on_its_figure(exp, kit, gate, limit, speculative):
    """The level's figure is missing, not the best of the others: the gate fails there."""
    variant = "eagle/3" if speculative else "other"
    ok = kit.record(exp, "h1", variant, kit.level(1, 60.0, accept=2.5), kit.level(64, 900.0, accept=2.5),
                    speculative=speculative)
    ok_entry = _one(gt.evaluate(ok, None, {gate: limit}), gate)
    assert ok_entry["passed"] is True and ok_entry["value"] is not None
    broken = kit.record(exp, "h1", variant, kit.level(1, 60.0, accept=2.5), kit.level(64, 0.0, failed=64),
                        speculative=speculative)
    entry = _one(gt.evaluate(broken, None, {gate: limit}), gate)
    assert entry["passed"] is False and entry["value"] is None
    assert "nothing completed at concurrency 64 (64 failed)" in entry["detail"]


def telemetry_level(kit, conc, tok_j, throttled, reasons=()):
    return dict(kit.level(conc, 60.0 * conc), output_tokens_per_joule=tok_j, throttled=throttled,
                throttle_reasons=list(reasons))


@pytest.mark.parametrize("levels, value, passed, words", [
    ([(1, 4.0, False), (64, 12.0, False)], False, True, "no level throttled"),
    ([(1, 4.0, False), (64, 12.0, True, ["hw_thermal_slowdown"])], True, False,
     "throttled at concurrency 64: hw_thermal_slowdown"),
    ([(1, None, None), (64, 12.0, False)], None, False, "no GPU telemetry at concurrency 1"),
])
def test_throttled_false_needs_telemetry_and_no_throttled_level(exp, kit, levels, value, passed, words):
    mine = kit.record(exp, "h1", "other", *[telemetry_level(kit, *lv) for lv in levels])
    entry = gt.evaluate(mine, None, {"throttled": False})[0]
    assert (entry["value"], entry["passed"]) == (value, passed) and words in entry["detail"]
    assert gt.evaluate(mine, None, {"throttled": True})[0]["passed"] is True


@pytest.mark.parametrize("limit, levels, value, passed, words", [
    (4.0, [(1, 4.0, False), (64, 12.0, False)], 4.0, True, "lowest tokens per joule at concurrency 1"),
    (5.0, [(1, 4.0, False), (64, 12.0, False)], 4.0, False, "lowest tokens per joule at concurrency 1"),
    (1.0, [(1, None, None), (64, 12.0, False)], None, False, "no tokens per joule at concurrency 1"),
])
def test_min_tokens_per_joule_on_the_least_efficient_level(exp, kit, limit, levels, value, passed, words):
    mine = kit.record(exp, "h1", "other", *[telemetry_level(kit, *lv) for lv in levels])
    entry = gt.evaluate(mine, None, {"min_tokens_per_joule": limit})[0]
    assert (entry["value"], entry["passed"]) == (value, passed) and words in entry["detail"]
    failed = kit.record(exp, "h1", "other", outcome="failed", stage="wait")
    assert gt.evaluate(failed, None, {"throttled": False})[0]["passed"] is False
