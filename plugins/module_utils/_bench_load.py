# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Closed-loop load for one concurrency level.

`level` workers, each with one persistent keep-alive connection opened before
the clock starts, all start at once and each sends its next request as soon as
its previous one ends, so `level` requests stay in flight. Requests are taken
in order from one list: the first `warmup` are the warm-up (one per worker by
default: the start-up burst), the rest are counted.
"""

from __future__ import annotations

import asyncio

from ansible_collections.gpufleet.serving.plugins.module_utils._bench_client import run_request
from ansible_collections.gpufleet.serving.plugins.module_utils._bench_http import open_connection


async def _run(target, path, bodies, level, timeout):
    requests = [target.post_bytes(path, b) for b in bodies]  # built before the clock starts
    records = [None] * len(requests)

    async def connect():
        try:
            return await open_connection(target, timeout)
        except (OSError, asyncio.TimeoutError):
            return None  # the worker retries per request and records the error

    states = [[p] for p in await asyncio.gather(*(connect() for unused in range(level)))]
    next_index = [0]

    async def worker(state):
        while next_index[0] < len(requests):
            i = next_index[0]
            next_index[0] += 1
            records[i] = await run_request(state, target, requests[i], timeout)

    try:
        await asyncio.gather(*(worker(s) for s in states))
    finally:
        for s in states:
            if s[0] is not None:
                s[0].abort()
    return records


def run_level(target, path, bodies, level, timeout):
    """Records for every body, in order (warm-up first); blocks until all are done."""
    return asyncio.run(_run(target, path, bodies, level, timeout))
