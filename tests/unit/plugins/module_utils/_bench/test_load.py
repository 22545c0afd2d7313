# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench/load.py: arrival times drawn as bench_serving draws them (seeded, mean gap 1/rate), and a
level's load on the stand-in server on loopback (tests/support/servers/standin.py), closed loop and
open loop, every request recorded in order."""

from __future__ import annotations

import json
import statistics
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import load
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint
from tests.support.servers.launch import StandIn


def body(n):
    return json.dumps({"model": "m", "prompt": "hi", "max_tokens": n, "stream": True, "ignore_eos": True,
                       "stream_options": {"include_usage": True, "continuous_usage_stats": True}}).encode()


@pytest.fixture
def standin():
    server = StandIn("--rate", "0", "--ttft", "0.01")
    yield server
    server.stop()


def test_arrivals_start_at_zero_are_seeded_and_average_one_over_the_rate():
    offsets = load.arrival_offsets(2000, rate=4.0, burstiness=1.0, seed=7)
    assert offsets[0] == 0.0 and offsets == sorted(offsets) and offsets == load.arrival_offsets(2000, 4.0, 1.0, 7)
    gaps = [b - a for a, b in zip(offsets, offsets[1:])]
    assert statistics.mean(gaps) == pytest.approx(0.25, rel=0.1)
    # Burstier arrivals (shape below 1) spread the gaps wider around the same mean.
    bursty = load.arrival_offsets(2000, 4.0, 0.25, 7)
    bursty_gaps = [b - a for a, b in zip(bursty, bursty[1:])]
    assert statistics.pstdev(bursty_gaps) > 1.5 * statistics.pstdev(gaps)


@pytest.mark.parametrize("connection", ["keep_alive", "per_request"])
def test_a_closed_loop_level_records_every_request_in_order(standin, connection):
    bodies = [body(n) for n in (3, 4, 5, 6, 7, 8)]
    records = load.run_level(Endpoint(standin.url), "/v1/completions", bodies, 2, 10.0, connection=connection)
    assert [r.ok for r in records] == [True] * 6, [r.error for r in records]
    assert [r.tokens for r in records] == [3, 4, 5, 6, 7, 8] and [r.max_tokens for r in records] == [3, 4, 5, 6, 7, 8]


def test_an_open_loop_level_sends_each_request_at_its_arrival(standin):
    t0 = time.monotonic()
    records = load.run_level(Endpoint(standin.url), "/v1/completions", [body(2)] * 4, None, 10.0,
                             request_rate=20.0, burstiness=1.0, max_concurrency=2, seed=3)
    assert [r.ok for r in records] == [True] * 4
    assert time.monotonic() - t0 >= load.arrival_offsets(4, 20.0, 1.0, 3)[-1]
    starts = [r.start for r in records]
    assert starts == sorted(starts)
