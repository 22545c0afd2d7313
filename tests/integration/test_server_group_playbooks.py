"""The other playbooks with a server that spans hosts (docs/multinode.md), on two simulated hosts:
swap_to_eagle.yml then swap_to_base.yml on a TP16 SGLang group (each swap launches the group on both
nodes, measures it once at rank 0, and leaves no rank of the other server), reset.yml (every rank on
both hosts killed, every GPU free), and an experiment that compares TP8 on host 1 with TP16 on hosts 1
and 2 (host 2 stands by during TP8; the report names each topology).

One fleet for the module (two hosts); each test ends with every GPU free.
"""
import json
import time

import pytest
from _fleet_fixtures import needs_fleet, start_fleet
from test_server_group import gpus_free, group_inventory, rank_titles

pytestmark = needs_fleet

BENCH = {"levels": [1], "requests_per_level": 2, "warmup_requests": 1, "input_len": 64, "output_len": 16}


@pytest.fixture(scope="module")
def fleet(request, tmp_path_factory):
    return start_fleet(request, tmp_path_factory.mktemp("groupplay"), 2, 2737)


def ranks(fleet):
    return [len(rank_titles(fleet, i, "sglang")) for i in (1, 2)]


def all_free(fleet):
    return [gpus_free(fleet, i) for i in (1, 2)]


def test_swap_to_eagle_then_back_and_reset_a_tp16_group(fleet):
    inventory = group_inventory(fleet, "sglang")
    extra = {"sglang_server_port": fleet.server_port, "benchmark": BENCH}
    started = time.monotonic()
    eagle = fleet.playbook("swap_to_eagle.yml", dict(extra, swap_report_dir=str(fleet.dir / "eagle")),
                           inventories=[inventory], timeout=600)
    print("group swap_to_eagle: %.1f s (playbook)" % (time.monotonic() - started))
    assert eagle.returncode == 0, eagle.output[-8000:]
    assert "sim-h2: node of the server at sim-h1 (rank 0), measured there" in eagle.output, eagle.output[-4000:]
    assert ranks(fleet) == [8, 8]
    assert "--speculative-algorithm" in fleet.ssh(2, "ps -eo args").stdout  # rank 1 runs the EAGLE-3 line too
    summary = json.loads((fleet.dir / "eagle" / "swap_summary.json").read_text())
    assert [h["host"] for h in summary["hosts"] if "at_rank_0" not in h] == ["sim-h1"], summary

    started = time.monotonic()
    base = fleet.playbook("swap_to_base.yml", dict(extra, swap_report_dir=str(fleet.dir / "base"),
                                                   swap_benchmark=True), inventories=[inventory], timeout=600)
    assert base.returncode == 0, base.output[-8000:]
    print("group swap_to_base: %.1f s (playbook)" % (time.monotonic() - started))
    assert ranks(fleet) == [8, 8]
    assert "--speculative-algorithm" not in fleet.ssh(1, "ps -eo args").stdout
    assert "--speculative-algorithm" not in fleet.ssh(2, "ps -eo args").stdout

    started = time.monotonic()
    reset = fleet.playbook("reset.yml", {"reset_term_timeout": 2}, inventories=[inventory])
    print("group reset: %.1f s (playbook)" % (time.monotonic() - started))
    assert reset.returncode == 0, reset.output[-8000:]
    assert ranks(fleet) == [0, 0] and all_free(fleet) == [True, True]
    watchers = [fleet.ssh(i, "ps -eo args").stdout.count("group_watch") for i in (1, 2)]
    assert watchers == [0, 0], watchers


def test_an_experiment_compares_tp8_on_one_host_with_tp16_on_two(fleet):
    names = [fleet.name(1), fleet.name(2)]
    experiment = fleet.dir / "topology.experiment.yml"
    experiment.write_text(json.dumps({
        "name": "topology", "reference": "tp8", "benchmark": BENCH,
        "variants": [{"name": "tp8", "engine": "sglang", "server": {"nodes": names[:1], "tp_size": 8}},
                     {"name": "tp16", "engine": "sglang", "server": {"nodes": names, "tp_size": 16}}]}))
    inventory = group_inventory(fleet, "sglang")
    results = fleet.dir / "topology"
    started = time.monotonic()
    run = fleet.playbook("experiment.yml", {"experiment_file": str(experiment), "experiment_results_dir": str(results),
                                            "sglang_server_nodes": [], "sglang_server_port": fleet.server_port},
                         inventories=[inventory], timeout=600)
    assert run.returncode == 0, run.output[-8000:]
    print("topology experiment: %.1f s (playbook)" % (time.monotonic() - started))
    report = json.loads((results / "experiment.json").read_text())
    assert report["experiment"]["assignments"] == {names[0]: ["tp8", "tp16"], names[1]: ["tp16"]}
    assert report["failures"] == [], report["failures"]
    assert report["topology"][names[0]] == {
        "tp8": {"nodes": names[:1], "nnodes": 1, "tp_size": 8, "pp_size": 1, "dp_size": 1, "ep_size": 1},
        "tp16": {"nodes": names, "nnodes": 2, "tp_size": 16, "pp_size": 1, "dp_size": 1, "ep_size": 1}}, report["topology"]
    assert "%s tp16: TP16 on %s, %s (nnodes 2), measured at rank 0" % (names[0], names[0], names[1]) in report["notes"]
    node = json.loads((results / "records" / names[1] / "tp16.json").read_text())
    assert (node["outcome"], node["measured_at"]) == ("ok", names[0]), node
    assert ranks(fleet) == [0, 0] and all_free(fleet) == [True, True]
