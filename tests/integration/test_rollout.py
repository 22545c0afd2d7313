# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A rollout behind the real sglang-router 0.3.2 loses no request (docs/rollout.md).

One simulated 3-host fleet; the router runs on the controller (its title, sglang::router, is one
SGLang's kill pattern matches, so never on a fleet host) in front of the three servers. A steady
load of 8 streaming clients goes through the router (each request about 1.8 s) while
swap_to_eagle.yml relaunches one host at a time:
- with router_url, each server leaves the router, drains by its own count, is stopped, relaunched
  and put back once healthy: 0 failed requests, 0 broken streams, never fewer than 2 healthy
  workers in the router;
- swap_to_base.yml back the same way under the shipped probe (rollout_probe): its report says 0 lost;
- an experiment.yml of 2 variants the same way (host by host, each host's server out of the router
  before its variants and back after them) under the shipped probe: 0 lost, never fewer than 2 healthy;
- then swap_to_eagle.yml on one host without router_url: the router keeps sending requests to the
  server being stopped, and the client sees them fail;
- then the refusals, each leaving the host serving and in the router: a removal below
  router_min_healthy (before anything is touched), a drain that runs out of time under load (the
  worker is put back, the failure names the requests in flight); and reset.yml with reset_drain
  stops a host under load without losing a request; drain_force stops a host whose drain ran out;
  a router restarted without the fleet's servers makes the next removal refuse, the host untouched;
  a second rollout through a router whose lock another run holds refuses before any host.
The load is bounded (8 clients, each request 200 tokens, each run under a deadline) and on loopback.
"""

import http.client
import json
import os
import statistics
import threading
import time
import urllib.request

from _fleet_fixtures import needs_fleet, start_fleet
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import run_lock
from ansible_collections.gpufleet.serving.plugins.module_utils._server.drain import read_in_flight
from tests.support import sse_client
from tests.support.polling import poll
from tests.support.router import start_router

pytestmark = needs_fleet

CLIENTS = 8
TOKENS = 200  # about 1.8 s a request on the simulated fleet (0.9 s at 100 tokens)
SHORT_BENCH = {"swap_bench_levels": [1], "swap_bench_requests_per_level": 2, "swap_bench_warmup_requests": 0,
               "swap_bench_input_len": 32, "swap_bench_output_len": 16}
SHORT_EXPERIMENT_BENCH = {"levels": [1], "requests_per_level": 2, "warmup_requests": 0, "input_len": 32, "output_len": 16}


class Load:
    """CLIENTS streaming clients through the router, each one request after the other until
    stop() (or DEADLINE seconds), and a reader of the router's healthy workers every 0.1 s."""

    def __init__(self, router, deadline, clients=None):
        self.router = router
        self.port = int(router.url.rsplit(":", 1)[1])
        self.until = time.monotonic() + deadline
        self.stopping = threading.Event()
        self.requests = []
        self.healthy = []  # (time, healthy workers listed)
        # Per worker URL taken out of the router, one record per removal (_follow_removed).
        self.received = {}
        self.listed = None
        count = CLIENTS if clients is None else clients
        self.threads = [threading.Thread(target=self._client, daemon=True) for unused in range(count)]
        self.threads.append(threading.Thread(target=self._watch, daemon=True))

    def _running(self):
        return not self.stopping.is_set() and time.monotonic() < self.until

    def _client(self):
        while self._running():
            start = time.monotonic()
            out = sse_client.stream(self.port, TOKENS, timeout=60)
            out["start"] = start
            self.requests.append(out)

    def _watch(self):
        while self._running():
            try:
                with urllib.request.urlopen(self.router.url + "/workers", timeout=5) as answer:
                    workers = json.load(answer)["workers"]
                self.healthy.append((time.monotonic(), sum(1 for w in workers if w["is_healthy"])))
                self._follow_removed({w["url"] for w in workers})
            except OSError:
                self.healthy.append((time.monotonic(), None))
            self.stopping.wait(0.1)

    def _follow_removed(self, listed):
        """The server's own count of requests received, read when the router stops listing it and
        then every 0.1 s until it stops answering (stopped) or the router lists it again."""
        for url in (self.listed or set()) - listed:
            count = _received(url)
            self.received.setdefault(url, []).append({"at_removal": count, "last": count, "open": count is not None})
        for url, reads in self.received.items():
            record = reads[-1]
            if record["open"]:
                count = None if url in listed else _received(url)
                record["open"] = count is not None
                record["last"] = record["last"] if count is None else count
        self.listed = listed

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(90)
        assert not any(t.is_alive() for t in self.threads), "a client is still running"

    def figures(self):
        failed = [r for r in self.requests if r["status"] != 200 or (r["error"] and not r["texts"])]
        broken = [r for r in self.requests if r["status"] == 200 and r["texts"] and not r["done"]]
        ok = [r for r in self.requests if r["status"] == 200 and r["done"] and r["finish"] == "length"]
        return {"sent": len(self.requests), "ok": len(ok), "failed": len(failed), "broken": len(broken),
                "lost": len(self.requests) - len(ok),
                "median_s": round(statistics.median(r["end"] - r["start"] for r in ok), 2) if ok else None,
                "min_healthy": min((n for unused_t, n in self.healthy if n is not None), default=None),
                "router_unread": sum(1 for unused_t, n in self.healthy if n is None)}


def _received(url):
    """Requests the server at URL has received, by its own /metrics: those it finished
    (sglang:num_requests_total) and those it runs or queues; None when it does not answer."""
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=2) as answer:
            text = answer.read().decode()
        names = ("sglang:num_requests", "sglang:num_running_reqs", "sglang:num_queue_reqs")
        return sum(sample.value for family in text_string_to_metric_families(text) if family.name in names
                   for sample in family.samples if sample.name in (names[0] + "_total",) + names[1:])
    except (OSError, ValueError, http.client.HTTPException):  # a server that is stopping may cut its answer
        return None


def _healthy(router):
    with urllib.request.urlopen(router.url + "/workers", timeout=5) as answer:
        return sorted(w["url"] for w in json.load(answer)["workers"] if w["is_healthy"])


def test_swap_behind_the_router_loses_no_request_and_without_it_does(request, tmp_path, procs):
    fleet = start_fleet(request, tmp_path, 3, 2711)
    launched = fleet.playbook("launch.yml", timeout=900)
    assert launched.returncode == 0, launched.output[-4000:]
    workers = ["http://%s:%d" % (fleet.address(i), fleet.server_port) for i in (1, 2, 3)]
    router = start_router(procs, tmp_path, workers)

    report_dir = tmp_path / "swap"
    with Load(router, deadline=900) as load:
        # The load is up before the rollout starts.
        assert sse_client.stream(load.port, 4, timeout=30)["done"]
        swap = fleet.playbook("swap_to_eagle.yml", dict(
            SHORT_BENCH, swap_baseline=False, swap_serial=1, swap_report_dir=str(report_dir),
            router_url=router.url, drain_timeout=60), timeout=900)
    routed = load.figures()
    print("with router_url:", routed)
    assert swap.returncode == 0, swap.output[-6000:]
    hosts = json.loads((report_dir / "swap_summary.json").read_text())["hosts"]
    drains = {h["host"]: h["drain"] for h in hosts}
    print("drains:", drains)
    for index in (1, 2, 3):
        drain = drains[fleet.name(index)]
        assert drain["worker"] == workers[index - 1] and drain["aborted"] == 0, drains
        assert drain["drain_s"] is not None and drain["drain_s"] < 30, drains
    assert routed["failed"] == 0 and routed["broken"] == 0 and routed["lost"] == 0, routed
    assert routed["ok"] >= 3 * CLIENTS and routed["median_s"] > 1, routed
    assert routed["min_healthy"] >= 2 and routed["router_unread"] == 0, routed
    # No request reached a server after its removal: its own count of requests received (finished,
    # running, queued: its /metrics), read as the router stopped listing it, did not grow until it
    # stopped answering.
    print("requests received at removal and last before the stop:", load.received)
    for url in workers:
        (record,) = load.received[url]
        assert record["at_removal"] and not record["open"] and record["last"] <= record["at_removal"], load.received
    # Every host is back in the router, healthy, serving EAGLE-3.
    assert _healthy(router) == workers

    # And back: swap_to_base.yml, serial, behind the router, under the shipped probe's load
    # (rollout_probe: the same 8 streaming clients, started by the playbook, reported by it).
    back_dir = tmp_path / "back"
    back = fleet.playbook("swap_to_base.yml", dict(
        swap_serial=1, router_url=router.url, drain_timeout=60, swap_report_dir=str(back_dir), rollout_probe=True,
        rollout_probe_clients=CLIENTS, rollout_probe_output_len=TOKENS), timeout=600)
    assert back.returncode == 0, back.output[-6000:]
    probed = json.loads((back_dir / "rollout_probe.json").read_text())
    figures = {k: probed[k] for k in ("sent", "completed", "failed", "broken", "healthy_floor", "healthy_max")}
    print("swap_to_base with router_url, rollout_probe:", figures, probed["phases"], probed["hosts"])
    assert probed["failed"] == 0 and probed["broken"] == 0 and probed["completed"] == probed["sent"], figures
    assert probed["completed"] >= 3 * CLIENTS and probed["healthy_floor"] == 2 and probed["healthy_max"] == 3, figures
    assert probed["router_unread"] == 0 and all(probed["phases"][p]["requests"] > 0 for p in ("before", "after"))
    assert [h["worker"] for h in probed["hosts"]] == workers, probed["hosts"]
    assert all(h["drain_s"] is not None and h["out_of_router_s"] > 0 for h in probed["hosts"]), probed["hosts"]
    assert "requests through the router, %d completed, 0 failed, 0 broken streams; fewest healthy workers 2 of 3" \
        % probed["completed"] in back.output, back.output[-4000:]
    assert (back_dir / "rollout_probe.md").exists() and (back_dir / "rollout_probe.png").stat().st_size > 10000
    assert _healthy(router) == workers

    # An experiment of 2 variants, host by host behind the router under the probe's load: each
    # host's server leaves the router (drained), the variants run, the server comes back healthy.
    experiment = tmp_path / "routed.experiment.yml"
    experiment.write_text(json.dumps({"name": "routed", "reference": "mem85", "benchmark": SHORT_EXPERIMENT_BENCH, "variants": [
        {"name": "mem85", "engine": "sglang", "server": {"mem_fraction_static": 0.85}},
        {"name": "mem80", "engine": "sglang", "server": {"mem_fraction_static": 0.8}}]}))
    exp_dir = tmp_path / "experiment"
    # The load is the probe's; this test's Load only follows the router's list (no clients of its own).
    with Load(router, deadline=900, clients=0) as watch:
        ran = fleet.playbook("experiment.yml", dict(
            experiment_file=str(experiment), experiment_results_dir=str(exp_dir), swap_serial=1, router_url=router.url,
            drain_timeout=60, rollout_probe=True, rollout_probe_clients=CLIENTS, rollout_probe_output_len=TOKENS,
            experiment_bench_progress_file=str(fleet.dir / "bench.progress")), timeout=900)
    assert ran.returncode == 0, ran.output[-6000:]
    # No request reached a server after its removal, through every removal of the experiment (the
    # inventory's server before the variants, each variant's server at its stop).
    print("experiment: requests received at each removal and last before the stop:", watch.received)
    assert sorted(watch.received) == workers, watch.received
    for url, records in watch.received.items():
        for record in records:
            assert not record["open"] and (record["at_removal"] is None or record["last"] <= record["at_removal"]), \
                (url, records)
    probed = json.loads((exp_dir / "rollout_probe.json").read_text())
    figures = {k: probed[k] for k in ("sent", "completed", "failed", "broken", "healthy_floor", "healthy_max")}
    print("experiment of 2 variants with router_url, rollout_probe:", figures, probed["hosts"])
    assert probed["failed"] == 0 and probed["broken"] == 0 and probed["completed"] == probed["sent"], figures
    assert probed["completed"] >= 3 * CLIENTS and probed["healthy_floor"] >= 2, figures
    assert [h["worker"] for h in probed["hosts"]] == workers, probed["hosts"]
    assert len(list((exp_dir / "records").rglob("*.json"))) == 6
    assert _healthy(router) == workers

    # The same swap on one host without router_url: the router is never told, the server is
    # stopped under load (a 3 s stop timeout keeps it short: SGLang drains with no deadline).
    with Load(router, deadline=300) as load:
        assert sse_client.stream(load.port, 4, timeout=30)["done"]
        bare = fleet.playbook("swap_to_eagle.yml", dict(
            SHORT_BENCH, swap_baseline=False, sglang_server_stop_timeout=3, swap_report_dir=str(tmp_path / "bare")),
            args=["--limit", fleet.name(1)], timeout=600)
    unrouted = load.figures()
    print("without router_url:", unrouted)
    assert bare.returncode == 0, bare.output[-6000:]
    assert unrouted["lost"] > 0, unrouted

    # A removal that would leave fewer than router_min_healthy: refused before the host is touched.
    routed_vars = {"router_url": router.url, "swap_report_dir": str(tmp_path / "faults")}
    refused = fleet.playbook("teardown.yml", dict(routed_vars, router_min_healthy=3), args=["--limit", fleet.name(2)])
    assert refused.returncode != 0, refused.output[-4000:]
    assert "refusing to remove worker %s from the router at %s: 2 healthy worker(s) would be left, fewer than " \
        "min_healthy=3; nothing was changed" % (workers[1], router.url) in refused.output, refused.output[-4000:]
    assert _healthy(router) == workers and fleet.server_info(2)

    # A drain that runs out of time (a long request on sim-h2, sent to it directly): the worker goes
    # back, the host fails naming the count, the request is not cut.
    with Load(router, deadline=300) as load:
        assert sse_client.stream(load.port, 4, timeout=30)["done"]
        held = sse_client.Streams(fleet.server_port, host=fleet.address(2))
        held.start("long", 6000)  # about 50 s: still running when the drain reads
        loads = HttpClient(workers[1], accept=None)
        poll(lambda: sum(read_in_flight(loads, registry.get("sglang"))) >= 1, timeout=30, interval=0.05,
             what="the long request in flight on sim-h2")
        short = fleet.playbook("teardown.yml", dict(routed_vars, drain_timeout=0.2), args=["--limit", fleet.name(2)])
        assert short.returncode != 0, short.output[-4000:]
        assert "The drain of %s did not end: " % workers[1] in short.output, short.output[-4000:]
        assert "requests in flight" in short.output and "The worker is back in the router" in short.output
        assert fleet.server_info(2)
        poll(lambda: _healthy(router) == workers, timeout=30, interval=0.1, what="sim-h2 healthy in the router again")
        # reset.yml with reset_drain: out of the router, drained, then released, under the same load.
        reset = fleet.playbook("reset.yml", dict(routed_vars, reset_drain=True), args=["--limit", fleet.name(3)])
        assert reset.returncode == 0, reset.output[-4000:]
        assert _healthy(router) == workers[:2]
    assert held.join(120)["long"]["done"], held.results
    faults = load.figures()
    print("refusals and reset_drain:", faults)
    assert faults["lost"] == 0 and faults["min_healthy"] >= 2, faults

    # drain_force: the same too-short drain stops the server anyway; its request in flight is cut.
    forced = sse_client.Streams(fleet.server_port, host=fleet.address(2))
    forced.start("long", 6000)
    poll(lambda: sum(read_in_flight(loads, registry.get("sglang"))) >= 1, timeout=30, interval=0.05,
         what="a long request in flight on sim-h2")
    stopped = fleet.playbook("teardown.yml", dict(routed_vars, drain_timeout=0.2, drain_force=True, sglang_server_stop_timeout=3),
                             args=["--limit", fleet.name(2)])
    assert stopped.returncode == 0, stopped.output[-4000:]
    assert not forced.join(60)["long"]["done"], forced.results
    assert _healthy(router) == workers[:1]

    # The router restarted without the fleet's servers (a fresh router that lists none): the next
    # removal refuses before the host is touched, naming what the router lists.
    fresh = start_router(procs, tmp_path)
    lost = fleet.playbook("teardown.yml", dict(routed_vars, router_url=fresh.url), args=["--limit", fleet.name(1)])
    assert lost.returncode != 0, lost.output[-4000:]
    assert "refusing to take worker %s out of the router at %s: the router does not list it (it lists 0 worker(s)); " \
        "was the router restarted without the fleet's servers?" % (workers[0], fresh.url) in lost.output, lost.output[-4000:]
    assert fleet.server_info(1) and _healthy(router) == workers[:1]

    # Two rollouts at once through one router: while another run holds the router's lock (this
    # test's own process stands for it), a swap refuses before any host is touched.
    lock_dir = tmp_path / "locks"
    run_lock.acquire(str(lock_dir), router.url, "the other rollout", run_lock.run_owner())
    second = fleet.playbook("swap_to_base.yml", dict(routed_vars, router_lock_dir=str(lock_dir)))
    assert second.returncode != 0, second.output[-4000:]
    assert "refusing to start: another rollout through %s is running (the other rollout, pid %d" \
        % (router.url, os.getpid()) in second.output, second.output[-4000:]
    assert fleet.server_info(1) and _healthy(router) == workers[:1]
