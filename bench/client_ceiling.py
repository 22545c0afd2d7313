#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How many output tokens/s one client core sustains (llm_benchmark's load client).

Starts tests/support/servers/standin.py at full speed (no delay, one token a
chunk: the worst case, one SSE event a token) and runs closed-loop levels. The
figure is tokens per second of the client's own CPU time. The baseline, in the
same run, is the same transport with events split but not JSON-parsed (the cost
floor of reading the stream); the ratio shows what full parsing costs.
Prints figures; asserts nothing about time.

    .venv/bin/python bench/client_ceiling.py [--levels 1 16 64] [--tokens 512]
    .venv/bin/python bench/client_ceiling.py --sim   # the simulated SGLang server instead
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "build", "collections"))
sys.path.insert(0, HERE)

from client_accuracy import start_bench_server, start_sim  # noqa: E402

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import client as bc  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.load import run_level  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint, Handler  # noqa: E402


class Drain(Handler):
    """Baseline: SSE events are split out but not parsed."""

    def __init__(self):
        self.events = 0

    def on_event(self, data, now):
        self.events += 1


class DrainRecord(bc.Record):
    def on_event(self, data, now):
        if data == b"[DONE]":
            self.done = True
        elif self.first is None:
            self.first = now
        self.chunk_times.append(now)


def measure(target, level, n_requests, tokens, model, record_cls):
    bodies = [bc.request_body("completions", model, 16, tokens, i, 0.0) for i in range(n_requests)]
    saved = bc.Record
    bc.Record = record_cls
    try:
        cpu0, t0 = time.process_time(), time.perf_counter()
        records = run_level(target, "/v1/completions", bodies, level, 120.0)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    finally:
        bc.Record = saved
    toks = n_requests * tokens
    bad = sum(1 for r in records if r.error)
    return toks / cpu, toks / wall, bad


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--sim", action="store_true", help="target sim/'s SGLang server (not full speed)")
    a = p.parse_args()
    srv = start_sim() if a.sim else start_bench_server("--rate", "0", "--ttft", "0")
    try:
        target = Endpoint(srv.url)
        print("server: %s" % srv.describe)
        print("%6s %16s %16s %16s %10s" % ("level", "client tok/cpu-s", "drain tok/cpu-s", "wall tok/s", "ratio"))
        for level in a.levels:
            n = max(2 * level, 8)
            base_cpu, unused_wall, unused_bad = measure(target, level, n, a.tokens, srv.model, DrainRecord)
            full_cpu, full_wall, bad = measure(target, level, n, a.tokens, srv.model, bc.Record)
            print("%6d %16.0f %16.0f %16.0f %9.2fx%s" % (level, full_cpu, base_cpu, full_wall, full_cpu / base_cpu,
                                                         "  (%d failed)" % bad if bad else ""))
        print("client tok/cpu-s: output tokens per second of the client's own CPU = one core's ceiling;\n"
              "ratio: full client against the parse-free drain of the same stream.")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
