# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The load of one level: closed loop at a fixed concurrency, or open loop at a request rate.

Closed loop: `level` workers, each with one persistent keep-alive connection
opened before the clock starts, all start at once and each sends its next
request as soon as its previous one ends, so `level` requests stay in flight.

Open loop (a request rate): requests arrive at times drawn like
sglang.bench_serving's `get_request` (gaps from a Gamma distribution of shape
`burstiness` and mean 1/rate; burstiness 1 is a Poisson process), each sent
at its arrival time, at most `max_concurrency` in flight when that is set
(later arrivals wait for a free slot, as in bench_serving's semaphore).

Either way requests are taken in order from one list: the first `warmup` are
the warm-up, the rest are counted. With connection=per_request every request
opens its own connection and its clock starts before connecting.
"""

from __future__ import annotations

import asyncio
import random

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import run_request
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint, open_connection
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.verdict import requested_max_tokens


def arrival_offsets(n: int, rate: float, burstiness: float, seed: int) -> list:
    """Seconds from the start at which each of n requests arrives (first at 0)."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for i in range(n):
        if i:
            # Gamma(shape=burstiness, scale=1/(rate*burstiness)): mean 1/rate, as bench_serving.
            t += rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
        out.append(t)
    return out


async def _connect(endpoint, timeout):
    try:
        return await open_connection(endpoint, timeout)
    except (OSError, asyncio.TimeoutError):
        return None  # the request retries and records the error


async def _closed(endpoint, requests, records, level, timeout, per_request):
    if per_request:
        states = [[None] for unused in range(level)]
    else:
        states = [[p] for p in await asyncio.gather(*(_connect(endpoint, timeout) for unused in range(level)))]
    next_index = [0]

    async def worker(state):
        while next_index[0] < len(requests):
            i = next_index[0]
            next_index[0] += 1
            records[i] = await run_request(state, endpoint, requests[i], timeout, per_request)

    try:
        await asyncio.gather(*(worker(s) for s in states))
    finally:
        for s in states:
            if s[0] is not None:
                s[0].abort()


async def _open(endpoint, requests, records, timeout, per_request, offsets, max_concurrency):
    idle = []
    if not per_request and max_concurrency:
        idle = [p for p in await asyncio.gather(*(_connect(endpoint, timeout)
                                                  for unused in range(min(max_concurrency, len(requests)))))
                if p is not None]
    used = []
    gate = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    loop = asyncio.get_running_loop()
    t0 = loop.time()

    async def one(i):
        delay = t0 + offsets[i] - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        if gate is not None:
            await gate.acquire()
        try:
            state = [idle.pop() if idle and not per_request else None]
            records[i] = await run_request(state, endpoint, requests[i], timeout, per_request)
            if state[0] is not None:
                (idle if state[0].reusable and not per_request else used).append(state[0])
        finally:
            if gate is not None:
                gate.release()

    try:
        await asyncio.gather(*(one(i) for i in range(len(requests))))
    finally:
        for p in idle + used:
            p.abort()


def run_level(endpoint: Endpoint, path: str, bodies: list, level: int | None, timeout: float, connection: str = "keep_alive",
              request_rate: float | None = None, burstiness: float = 1.0, max_concurrency: int | None = None, seed: int = 0) -> list:
    """Records for every body, in order (warm-up first); blocks until all are done.

    level: the concurrency of a closed-loop level (ignored with a request_rate).
    """
    per_request = connection == "per_request"
    requests = [endpoint.post_bytes(path, b, close=per_request) for b in bodies]  # built before the clock
    records = [None] * len(requests)
    if request_rate:
        offsets = arrival_offsets(len(requests), request_rate, burstiness, seed)
        coro = _open(endpoint, requests, records, timeout, per_request, offsets, max_concurrency)
    else:
        coro = _closed(endpoint, requests, records, level, timeout, per_request)
    asyncio.run(coro)
    for rec, body in zip(records, bodies):
        if rec is not None:
            rec.max_tokens = requested_max_tokens(body)
    return records
