# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A relaunched server that never becomes healthy in the router is rolled back (docs/rollout.md).

A simulated 2-host fleet behind the real sglang-router 0.3.2 on the controller. swap_to_eagle.yml
on sim-h1 with router_url, under sim-h1's fault SGLANG_SIM_SICK_DRAFTER (its EAGLE-3 server
answers /health 200 once, so server_wait calls it ready, then 503, so the router never does):
router_in.yml runs out of router_join_timeout, the host fails naming the worker and the router,
the rescue relaunches the base server (its stop does not refuse the worker the router never
listed) and puts it back, healthy. Meanwhile a streaming client through the router loses nothing.
"""

import json
import urllib.request

from _fleet_fixtures import needs_fleet, start_fleet

from tests.support import sse_client
from tests.support.router import healthy_urls, start_router

pytestmark = needs_fleet

JOIN_TIMEOUT_S = 5


def test_a_relaunch_the_router_never_calls_healthy_is_rolled_back(request, tmp_path, procs):
    fleet = start_fleet(request, tmp_path, 2, 2713)
    launched = fleet.playbook("launch.yml", timeout=600)
    assert launched.returncode == 0, launched.output[-4000:]
    workers = ["http://%s:%d" % (fleet.address(i), fleet.server_port) for i in (1, 2)]
    router = start_router(procs, tmp_path, workers)
    port = int(router.url.rsplit(":", 1)[1])

    streams = sse_client.Streams(port)
    for index in range(4):
        streams.start("before-%d" % index, 1000)  # about 9 s: in flight when sim-h1 leaves
    report_dir = tmp_path / "swap"
    swap = fleet.playbook("swap_to_eagle.yml", dict(
        swap_baseline=False, swap_bench_levels=[1], swap_bench_requests_per_level=2, swap_bench_warmup_requests=0,
        swap_bench_input_len=32, swap_bench_output_len=16, swap_report_dir=str(report_dir), router_url=router.url,
        router_join_timeout=JOIN_TIMEOUT_S, drain_timeout=60, sglang_server_env={"SGLANG_SIM_SICK_DRAFTER": "1"}),
        args=["--limit", fleet.name(1)], timeout=600)
    assert swap.returncode != 0, swap.output[-6000:]
    (host,) = json.loads((report_dir / "swap_summary.json").read_text())["hosts"]
    assert host["outcome"] == "failed" and host["stage"] == "eagle" and host["rolled_back"] is True, host
    assert "worker %s is not healthy in the router at %s after %d s" % (workers[0], router.url, JOIN_TIMEOUT_S) \
        in host["reason"], host
    assert "server left: base server (restored, ready in" in swap.output, swap.output[-6000:]
    # The base server serves again, and the router calls it healthy (router_in.yml of the rollback).
    assert fleet.server_info(1)["speculative_algorithm"] is None
    assert healthy_urls(router) == set(workers)
    assert sse_client.stream(port, 4, timeout=30)["done"]
    results = streams.join(120)
    assert all(r["done"] for r in results.values()), results
    with urllib.request.urlopen(router.url + "/workers", timeout=5) as answer:
        listed = [w["url"] for w in json.load(answer)["workers"]]
    assert sorted(listed) == sorted(workers), listed  # the EAGLE-3 server left no entry behind
