# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Merging per-host results: input shapes, fleet sums, ratios, notes."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge as rm  # noqa: E402


def lv(c, tps, p50=100.0, p99=200.0, accept=None, failed=0):
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": p50, "p99": p99},
            "accept_length": accept, "completed": 8, "failed": failed}


def result(*levels):
    return {"changed": False, "levels": list(levels)}


BASE_A = result(lv(1, 60.0, 50, 60), lv(8, 400.0), lv(128, 2000.0, 900, 1500))
CAND_A = result(lv(1, 90.0, 40, 55, 2.8), lv(8, 500.0, accept=2.6), lv(128, 1800.0, 1000, 1600, 2.4))
BASE_B = result(lv(1, 62.0), lv(8, 410.0), lv(128, 2100.0))
CAND_B = result(lv(1, 93.0, accept=3.0), lv(8, 520.0, accept=3.0), lv(128, 1900.0, accept=3.0))


@pytest.mark.parametrize("shape", ["dict", "list-per-host", "list-of-items"])
def test_shapes_give_the_same_report(shape):
    if shape == "dict":
        results = {"a": {"baseline": BASE_A, "candidate": CAND_A}, "b": {"baseline": BASE_B, "candidate": CAND_B}}
    elif shape == "list-per-host":
        results = {"a": [BASE_A, CAND_A], "b": [BASE_B, CAND_B]}
    else:
        results = [{"host": "b", "baseline": BASE_B, "candidate": CAND_B},
                   {"host": "a", "baseline": BASE_A, "candidate": CAND_A}]
    rep = rm.merge(results)
    a = rep["hosts"]["a"]
    assert a["baseline"]["single_stream_tok_s"] == 60.0
    assert (a["baseline"]["peak_tok_s"], a["baseline"]["peak_concurrency"]) == (2000.0, 128)
    assert a["baseline"]["ttft_at_1_ms"] == {"p50": 50, "p99": 60}
    assert a["baseline"]["ttft_at_peak_ms"] == {"p50": 900, "p99": 1500}
    assert a["candidate"]["accept_length"] == pytest.approx(2.6)
    assert [r["ratio"] for r in a["ratio"]] == [1.5, 1.25, 0.9]
    fleet = rep["fleet"]
    assert [r["output_tok_s"] for r in fleet["baseline"]["levels"]] == [122.0, 810.0, 4100.0]
    assert fleet["baseline"]["single_stream_tok_s"] == 122.0
    assert (fleet["candidate"]["peak_tok_s"], fleet["candidate"]["peak_concurrency"]) == (3700.0, 128)
    assert [r["ratio"] for r in fleet["ratio"]] == [pytest.approx(183.0 / 122.0, abs=1e-3),
                                                    pytest.approx(1020.0 / 810.0, abs=1e-3),
                                                    pytest.approx(3700.0 / 4100.0, abs=1e-3)]
    assert rep["notes"] == []


def test_failed_and_missing_results_become_notes():
    failed = {"failed": True, "msg": "no answer from http://127.0.0.1:30000/v1/models"}
    rep = rm.merge({"a": {"baseline": BASE_A, "candidate": failed}, "b": [BASE_B]})
    assert rep["hosts"]["a"]["candidate"] is None
    assert rep["hosts"]["a"]["ratio"] == [] and rep["hosts"]["b"]["ratio"] == []
    assert rep["notes"] == ["a candidate: no result (no answer from http://127.0.0.1:30000/v1/models)"]
    assert rep["fleet"]["candidate"] is None
    assert rep["fleet"]["baseline"]["hosts"] == 2


def test_partial_fleet_level_is_noted():
    rep = rm.merge({"a": [BASE_A], "b": [result(lv(1, 62.0), lv(8, 410.0))]})
    row128 = rep["fleet"]["baseline"]["levels"][-1]
    assert row128["output_tok_s"] == 2000.0 and row128["hosts"] == 1
    assert rep["notes"] == ["fleet baseline at concurrency 128 sums 1 of 2 hosts"]


def test_bare_levels_lists_are_accepted():
    rep = rm.merge({"a": {"baseline": BASE_A["levels"]}})
    assert rep["hosts"]["a"]["baseline"]["peak_tok_s"] == 2000.0


@pytest.mark.parametrize("bad", [42, {}, {"a": "x"}, {"a": [1, 2, 3]}, [{"baseline": BASE_A}]])
def test_bad_shapes_are_refused(bad):
    with pytest.raises(InvalidInput):
        rm.merge(bad)


def test_a_level_where_nothing_completed_is_never_a_zero_result():
    dead = dict(lv(16, 0.0, 0.0, 0.0), completed=0, failed=32, requests_per_s=0.0)
    rep = rm.merge({"a": {"baseline": result(lv(1, 60.0), dead), "candidate": CAND_A}})
    side = rep["hosts"]["a"]["baseline"]
    row = [r for r in side["levels"] if r["concurrency"] == 16][0]
    assert row["output_tok_s"] is None and row["requests_per_s"] is None and row["ttft_p50_ms"] is None
    assert row["all_failed"] is True and row["failed"] == 32
    assert side["peak_tok_s"] == 60.0
    assert all(r["output_tok_s"] != 0.0 for r in rep["fleet"]["baseline"]["levels"])


def test_a_server_across_hosts_keeps_its_topology_and_says_so():
    topology = {"nodes": ["a", "b"], "nnodes": 2, "tp_size": 16, "pp_size": 1, "dp_size": 1, "ep_size": 16}
    report = rm.merge({"a": {"baseline": BASE_A, "topology": topology}, "c": {"baseline": BASE_B}})
    assert report["hosts"]["a"]["topology"] == topology and "topology" not in report["hosts"]["c"]
    assert ("a: one server across a, b (nnodes 2, tp_size 16, pp_size 1, dp_size 1, ep_size 16), measured at rank 0"
            in report["notes"])
