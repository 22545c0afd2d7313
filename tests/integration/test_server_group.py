"""One server across two simulated hosts (docs/multinode.md): launch.yml launches a TP16 group
(rank 0 on sim-h1, rank 1 on sim-h2), waits until rank 0 generates and every rank of sim-h2 runs,
benchmark.yml measures it at rank 0, teardown.yml stops both nodes and proves all 16 GPUs free;
a node that never joins fails the launch within dist_timeout + 10 s, naming it.

One fleet for the module (two hosts); each test ends with the group torn down.
"""
import json
import re
import time

import pytest
from _fleet_fixtures import needs_fleet, start_fleet, wait_for

pytestmark = needs_fleet

DIST_TIMEOUT = 5
ENGINES = {
    "sglang": {"titles": ("sglang::scheduler",)},
    "vllm": {"titles": ("VLLM::Worker",)},
}


@pytest.fixture(scope="module")
def fleet(request, tmp_path_factory):
    return start_fleet(request, tmp_path_factory.mktemp("group"), 2, 2736)


def group_inventory(fleet, engine, **host2):
    """A second inventory: the group tp16 of both hosts, its settings, and host 2's own ones."""
    prefix = engine + "_server_"
    inventory = fleet.dir / ("group-%s.yml" % engine)
    group_vars = {prefix + "nodes": "{{ groups['tp16'] }}", prefix + "tp_size": 16,
                  prefix + "dist_port": fleet.server_port + 1000, prefix + "dist_timeout": DIST_TIMEOUT,
                  prefix + "port": fleet.server_port, prefix + "stop_timeout": 5,
                  prefix + "ready_timeout": 120, prefix + "progress_interval": 2}
    hosts = {fleet.name(1): {}, fleet.name(2): {prefix + k: v for k, v in host2.items()}}
    inventory.write_text(json.dumps({"tp16": {"hosts": hosts, "vars": group_vars}}))
    return inventory


def rank_titles(fleet, index, engine):
    out = fleet.ssh(index, "ps -eo args").stdout.splitlines()
    return [line for line in out if line.startswith(ENGINES[engine]["titles"])]


def main_pid(fleet, index, engine):
    state = fleet.host_dir(index) / "lib" / "gpufleet-serving" / ("%s-%d.json" % (engine, fleet.server_port))
    return int(json.loads(state.read_text())["pid"])


def relaunch_after_a_lost_node(fleet, engine, inventory, extra):
    """An unchanged group is kept on every node; once rank 1's main process is gone, the next launch relaunches
    both nodes (rank 0 alone could not take a new rank 1) on the same hosts and ports."""
    before = [main_pid(fleet, i, engine) for i in (1, 2)]
    kept = fleet.playbook("launch.yml", extra, inventories=[inventory])
    assert kept.returncode == 0, kept.output[-6000:]
    assert [main_pid(fleet, i, engine) for i in (1, 2)] == before
    fleet.ssh(2, "kill -9 %d" % before[1])
    again = fleet.playbook("launch.yml", extra, inventories=[inventory])
    assert again.returncode == 0, again.output[-6000:]
    after = [main_pid(fleet, i, engine) for i in (1, 2)]
    assert after[0] != before[0] and after[1] != before[1], (before, after)
    assert len(rank_titles(fleet, 1, engine)) == 8 and len(rank_titles(fleet, 2, engine)) == 8


def gpus_free(fleet, index):
    found = fleet.module(fleet.name(index), "gpufleet.serving.gpu_info")["gpus"]
    return len(found) == 8 and all(g["used_mib"] == 0 and not g["holders"] for g in found)


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_tp16_group_launches_is_benchmarked_at_rank_0_and_torn_down(fleet, engine):
    inventory = group_inventory(fleet, engine)
    extra = {"engine": engine, engine + "_server_port": fleet.server_port}
    started = time.monotonic()
    run = fleet.playbook("launch.yml", extra, inventories=[inventory])
    launch_s = time.monotonic() - started
    assert run.returncode == 0, run.output[-6000:]
    assert "Wait until every rank of this node runs" in run.output
    # 8 ranks on each node: TP0-7 on rank 0, TP8-15 (SGLang) on rank 1.
    assert len(rank_titles(fleet, 1, engine)) == 8 and len(rank_titles(fleet, 2, engine)) == 8, run.output[-3000:]
    print("%s group launch: %.1f s (playbook)" % (engine, launch_s))
    if engine == "sglang":
        relaunch_after_a_lost_node(fleet, engine, inventory, extra)

    # The whole fleet: rank 0 is measured, rank 1 says where.
    bench = fleet.playbook("benchmark.yml", dict(extra, bench_report_dir=str(fleet.dir / engine),
                                                 benchmark={"levels": [1], "requests_per_level": 2, "warmup_requests": 1,
                                                            "input_len": 64, "output_len": 16}), inventories=[inventory])
    assert bench.returncode == 0, bench.output[-6000:]
    assert '"sim-h2: node of the server at sim-h1 (rank 0), measured there"' in bench.output, bench.output[-3000:]
    report = json.loads((fleet.dir / engine / "benchmark.json").read_text())
    assert list(report["hosts"]) == ["sim-h1"], report["hosts"].keys()
    assert report["hosts"]["sim-h1"]["topology"] == {"nodes": ["sim-h1", "sim-h2"], "nnodes": 2, "tp_size": 16,
                                                     "pp_size": 1, "dp_size": 1, "ep_size": 1}
    assert "Topology: one server across sim-h1, sim-h2 (nnodes 2, tp_size 16, pp_size 1" in (fleet.dir / engine / "benchmark.md").read_text()

    started = time.monotonic()
    down = fleet.playbook("teardown.yml", extra, inventories=[inventory])
    assert down.returncode == 0, down.output[-6000:]
    print("%s group teardown: %.1f s (playbook)" % (engine, time.monotonic() - started))
    for index in (1, 2):
        assert rank_titles(fleet, index, engine) == [], index
        assert gpus_free(fleet, index), index


def test_a_node_that_never_joins_fails_the_launch_naming_it(fleet):
    # sim-h2's server never reaches the rendezvous (it sleeps): the group must fail naming it.
    fleet.ssh(2, "printf '#!/bin/sh\\nexec sleep 600\\n' > /var/tmp/never-joins && chmod 755 /var/tmp/never-joins")
    inventory = group_inventory(fleet, "sglang", entry_point="/var/tmp/never-joins")
    extra = {"sglang_server_port": fleet.server_port}
    started = time.monotonic()
    run = fleet.playbook("launch.yml", extra, inventories=[inventory])
    failed_s = time.monotonic() - started
    assert run.returncode != 0
    assert re.search(r"node sim-h2 \(rank 1\): it did not start its ranks within the dist timeout \(%d s\) \+ 10 s"
                     % DIST_TIMEOUT, run.output), run.output[-6000:]
    assert "%s: node(s) sim-h2 never joined" % "server group [sim-h1, sim-h2]" in run.output, run.output[-6000:]
    failure = json.loads(re.search(r"fatal: \[sim-h2\]: FAILED! => (\{.*\})", run.output).group(1))
    assert (failure["node"], failure["rank"]) == ("sim-h2", 1), failure
    waited = failure["elapsed"]
    assert DIST_TIMEOUT + 10 <= waited <= DIST_TIMEOUT + 10 + 2, waited
    print("missing node: failed after %.1f s of the wait, %.1f s playbook" % (waited, failed_s))

    down = fleet.playbook("teardown.yml", extra, inventories=[inventory])
    assert down.returncode == 0, down.output[-6000:]
    for index in (1, 2):
        assert gpus_free(fleet, index), index


def rank_pids(fleet, index, title):
    rows = [line.split(None, 1) for line in fleet.ssh(index, "ps -eo pid,args").stdout.splitlines()[1:]]
    return [int(pid) for pid, args in rows if args.startswith(title)]


def server_record(fleet, index):
    """The group's server on host INDEX, as gpufleet.serving.server_info reports it."""
    return fleet.module(fleet.name(index), "gpufleet.serving.server_info", {"engine": "sglang", "port": fleet.server_port})["servers"][0]


def test_a_dead_rank_takes_the_group_down_within_5_s_and_it_relaunches(fleet):
    # While the group serves, one scheduler of rank 1 (sim-h2) is killed by PID: the nodes' watchers
    # (group_watch.py) must stop every rank on both hosts within 5 s and record the node, rank and cause.
    inventory = group_inventory(fleet, "sglang")
    extra = {"sglang_server_port": fleet.server_port}
    run = fleet.playbook("launch.yml", extra, inventories=[inventory])
    assert run.returncode == 0, run.output[-6000:]
    victim = rank_pids(fleet, 2, "sglang::scheduler_TP9")
    assert len(victim) == 1, victim
    killed_at = time.time()
    fleet.ssh(2, "kill -9 %d" % victim[0])
    killed = time.monotonic()
    deadline = killed + 5
    while any(rank_titles(fleet, i, "sglang") for i in (1, 2)) and time.monotonic() < deadline:
        time.sleep(0.05)
    down_s = time.monotonic() - killed
    assert [rank_titles(fleet, i, "sglang") for i in (1, 2)] == [[], []], down_s
    print("dead rank: every rank of both nodes gone %.2f s after the kill" % down_s)
    # Each watcher then verifies its node's 8 GPUs free in NVML (the fake NVML of each simulated host) and
    # rewrites its record with the result; server_info hands that record back.
    found = {}
    for index in (1, 2):
        assert wait_for(lambda i=index: (server_record(fleet, i)["last_group_down"] or {}).get("gpus"), 15), index
        found[index] = server_record(fleet, index)["last_group_down"]
    for record in found.values():
        assert (record["node"], record["rank"]) == ("sim-h2", 1), record
        assert "sglang::scheduler_TP9" in record["cause"], record
        assert (record["gpus"]["checked"], record["gpus"]["free"]) == (True, True), record["gpus"]
        assert [g["index"] for g in record["gpus"]["gpus"] if g["free"]] == list(range(8)), record["gpus"]
        assert record["gpus"]["at"] - killed_at < 5, (record["gpus"]["at"] - killed_at)
    assert [found[i]["seen_by"] for i in (1, 2)] == ["sim-h1", "sim-h2"]
    print("dead rank: all 16 GPUs verified free by the watchers %.2f s after the kill"
          % (max(r["gpus"]["at"] for r in found.values()) - killed_at))

    again = fleet.playbook("launch.yml", extra, inventories=[inventory], args=("-v",))
    assert again.returncode == 0, again.output[-6000:]
    assert "the group's last run went down: node sim-h2 (rank 1)" in again.output, again.output[-3000:]
    assert len(rank_titles(fleet, 1, "sglang")) == 8 and len(rank_titles(fleet, 2, "sglang")) == 8
    down = fleet.playbook("teardown.yml", extra, inventories=[inventory])
    assert down.returncode == 0, down.output[-6000:]
    for index in (1, 2):
        assert rank_titles(fleet, index, "sglang") == [] and gpus_free(fleet, index), index
