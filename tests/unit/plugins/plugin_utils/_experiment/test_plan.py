# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_experiment/plan.py: which variants run on which host, from the records of earlier runs."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.plan import plan


def test_plan_skips_what_is_recorded_and_reruns_what_changed_or_failed(experiment, kit, tmp_path):
    exp = experiment()
    kit.save(tmp_path, kit.record(exp, "h1", "base", kit.level(1, 60.0)))
    kit.save(tmp_path, dict(kit.record(exp, "h1", "eagle/3", kit.level(1, 60.0)), fingerprint="sha256:old"))
    kit.save(tmp_path, kit.record(exp, "h1", "other", outcome="failed", stage="wait", reason="exited"))
    out = plan(exp["file"], ["h1"], str(tmp_path))
    assert out["todo"] == {"h1": ["eagle/3", "other"]} and out["recorded"] == {"h1": ["base"]}
    assert out["rerun"] == {"h1": ["eagle/3"]} and out["changed"] is False
    assert out["record_files"]["h1"]["eagle/3"] == store.record_file(tmp_path, "h1", "eagle/3")
    assert out["lines"] == [
        "h1: 2 of 3 variants to run: eagle/3 (settings changed since its record: runs again), "
        "other (recorded as FAILED at stage wait: runs again)",
        "h1: 1 skipped, recorded with the same settings: base (finished 2026-05-01T10:00:00Z)"]


def test_a_host_variable_that_changed_runs_the_variant_again(experiment, kit, tmp_path):
    """The record of base on h1 was written with the inventory's model /models/a; the inventory now
    says /models/b: base runs again on h1 (its record's fingerprint is no longer the host's)."""
    exp = experiment()
    models = {"h1": "/models/a"}

    def resolve(host, requests):
        return [{"engine": r["engine"], "model_path": models[host], "state": "planned"} for r in requests]

    first = plan(exp["file"], ["h1"], str(tmp_path), resolve=resolve)
    assert first["host_fingerprints"]["h1"]["base"] != exp["variants"][0]["fingerprint"]
    kit.save(tmp_path, dict(kit.record(exp, "h1", "base", kit.level(1, 60.0)),
                            fingerprint=first["host_fingerprints"]["h1"]["base"]))
    assert plan(exp["file"], ["h1"], str(tmp_path), resolve=resolve)["recorded"] == {"h1": ["base"]}
    models["h1"] = "/models/b"
    again = plan(exp["file"], ["h1"], str(tmp_path), resolve=resolve)
    assert again["recorded"] == {"h1": []} and again["rerun"] == {"h1": ["base"]}
    assert "base" in again["todo"]["h1"]


TOPOLOGY = """\
reference: tp8
variants:
  - {name: tp8, engine: sglang, server: {nodes: [h1], tp_size: 8}}
  - {name: tp16, engine: sglang, server: {nodes: [h1, h2], tp_size: 16}}
  - {name: free, engine: sglang}
"""


def test_a_variant_runs_on_its_nodes_and_a_group_comes_first_at_one_position(kit, tmp_path):
    path = tmp_path / "topo.experiment.yml"
    path.write_text(TOPOLOGY)
    out = plan(str(path), ["h1", "h2", "h3"], str(tmp_path))
    assert out["assignments"] == {"h1": ["tp8", "tp16", "free"], "h2": ["tp16", "free"], "h3": ["free"]}
    # The group first on both nodes, then each host's own variants; h3 has no part in the group.
    assert out["slots"] == {"h1": ["tp16", "tp8", "free"], "h2": ["tp16", "free"], "h3": ["free"]}


def test_a_group_is_done_on_every_node_when_rank_0_measured_it(kit, tmp_path):
    path = tmp_path / "topo.experiment.yml"
    path.write_text(TOPOLOGY)
    exp = plan(str(path), ["h1", "h2"], str(tmp_path))
    kit.save(tmp_path, dict(kit.record(exp, "h1", "tp16", kit.level(1, 60.0)), topology={"nodes": ["h1", "h2"]}))
    kit.save(tmp_path, dict(kit.record(exp, "h2", "tp16"), bench={}, measured_at="h1"))
    out = plan(str(path), ["h1", "h2"], str(tmp_path))
    assert out["todo"] == {"h1": ["tp8", "free"], "h2": ["free"]}
    assert out["slots"] == {"h1": ["tp8", "free"], "h2": ["free"]}
    # Rank 0's record gone: the group runs again on both nodes, whatever the other node recorded.
    (tmp_path / "records" / "h1" / "tp16.json").unlink()
    again = plan(str(path), ["h1", "h2"], str(tmp_path))
    assert again["todo"] == {"h1": ["tp8", "tp16", "free"], "h2": ["tp16", "free"]}
