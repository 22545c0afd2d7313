# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/rollout_probe.py: outcomes counted, phases cut at the router's first and last change,
latency percentiles per phase, each worker's time out of the router, the per-host rows, the
Markdown table (names escaped) and the throughput bins."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import rollout_probe
from tests.support.probe_data import DRAINS, W1, W2, W3, probe


def test_the_figures_of_a_rollout_with_one_worker_out():
    summary = rollout_probe.summarize(probe(), DRAINS)
    assert (summary["sent"], summary["completed"], summary["failed"], summary["broken"]) == (10, 8, 1, 1)
    assert (summary["healthy_floor"], summary["healthy_max"], summary["router_unread"]) == (2, 3, 1)
    assert summary["change_window_s"] == [4.0, 7.0]
    phases = summary["phases"]
    assert [phases[p]["requests"] for p in rollout_probe.PHASES] == [4, 4, 2]
    assert [phases[p]["lost"] for p in rollout_probe.PHASES] == [0, 2, 0]
    assert phases["before"]["ttft_p50_ms"] == 50.0 and phases["before"]["tpot_p99_ms"] == 10.0
    assert summary["hosts"] == [
        {"host": "sim-h1", "worker": None, "drain_s": None, "aborted": None, "out_of_router_s": None},
        {"host": "sim-h2", "worker": W2, "drain_s": 1.25, "aborted": 0, "out_of_router_s": 3.0}]
    assert summary["errors"] == ["HTTP 503: no_available_workers"]


def test_no_change_in_the_router_is_all_during_and_nothing_is_none():
    data = probe()
    data["samples"] = [s for s in data["samples"] if s["t"] < 3.5]
    summary = rollout_probe.summarize(data)
    assert summary["change_window_s"] is None and summary["phases"]["during"]["requests"] == 10
    assert summary["hosts"] == [] and rollout_probe.out_of_router(data["samples"]) == {W1: 0.0, W2: 0.0, W3: 0.0}
    empty = rollout_probe.summarize({"requests": [], "samples": []})
    assert (empty["sent"], empty["healthy_floor"], empty["phases"]["during"]["ttft_p50_ms"]) == (0, None, None)


def test_the_markdown_table_and_headline():
    data = rollout_probe.report(probe(), dict(DRAINS, **{"a|b": None}), "Rollout *probe*")
    text = rollout_probe.markdown(data, plot_name="rollout_probe.png")
    assert text.startswith("# Rollout \\*probe\\*\n")
    assert "10 requests through the router, 8 completed, 1 failed, 1 broken streams; fewest healthy workers 2 of 3" in text
    assert "| during | 4 | 2 | 50.0 | 50.0 | 10.00 | 10.00 |" in text
    assert "| sim-h2 | %s | 1.25 | 3.0 |" % W2 in text and "| a\\|b | - | - | - |" in text
    assert "![throughput and healthy workers over time](rollout_probe.png)" in text
    assert "no matplotlib" in rollout_probe.markdown(data, plot_note="no matplotlib")


def test_throughput_spreads_each_completed_request_over_its_streaming():
    bins = rollout_probe.throughput(probe()["requests"], width=2.0)
    # The requests at 0 s and 1 s stream from 0.05 s to 1 s and from 1.05 s to 2 s: 200 tokens in bin 0.
    assert bins[0] == (0.0, 100.0) and sum(t for unused, t in bins) * 2.0 == pytest.approx(800.0)
    assert rollout_probe.throughput([]) == []
    assert rollout_probe.losses(probe()["requests"]) == [(5.1, "failed"), (6.5, "broken")]


def test_build_writes_the_files_once(tmp_path):
    out = rollout_probe.build(probe(), DRAINS, str(tmp_path), "T")
    assert out["changed"] is True and out["figures"] == {"sent": 10, "completed": 8, "failed": 1, "broken": 1,
                                                         "healthy_floor": 2}
    assert (tmp_path / "rollout_probe.md").exists() and (tmp_path / "rollout_probe.json").exists()
    assert rollout_probe.build(probe(), DRAINS, str(tmp_path), "T")["changed"] is False
