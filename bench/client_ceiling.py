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
    .venv/bin/python bench/client_ceiling.py --telemetry   # the client's CPU per token without and
        # with llm_benchmark's telemetry sampler (8 fake GPUs, busy) running, and the sampler's own
        # CPU (a child process: it must cost the client at most 1% of its CPU per token)
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "build", "collections"))
sys.path.insert(0, HERE)

from client_accuracy import start_bench_server, start_sim  # noqa: E402

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import client as bc  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.load import run_level  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint, Handler  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "sim"))
from simlib import fakegpu  # noqa: E402

TELEMETRY_GPUS = list(range(8))


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


def _cpu_s(pid):
    """utime + stime of PID in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _with_fake_gpus():
    """Re-run this script on a fresh fake host of 8 busy GPUs (the loader reads LD_LIBRARY_PATH at start)."""
    if os.environ.get("FAKE_NVML_ROOT"):
        return os.environ["FAKE_NVML_ROOT"]
    root = fakegpu.init(os.path.join(tempfile.mkdtemp(prefix="ceiling-gpus-"), "gpu"), gpus=len(TELEMETRY_GPUS))
    fakegpu.set_load(root, TELEMETRY_GPUS, 0.8)
    os.environ.update(fakegpu.env(root))
    os.execv(sys.executable, [sys.executable] + sys.argv)


def telemetry_cost(target, srv, levels, tokens, rounds=7):
    """Per level, ROUNDS pairs of runs without and with the sampler, interleaved: the medians of the
    client's tok/cpu-s, the client's own CPU for the sampler's work (begin, end and the figures, outside
    the level's timing) per token, and the sampler child's CPU per token."""
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.telemetry import Sampler, window_figures
    print("%6s %14s %14s %10s %18s %18s %14s %8s" % ("level", "tok/cpu-s", "with sampler", "change",
                                                     "client us/token", "sampler us/token", "sampler core", "samples"))
    for level in levels:
        n = max(4 * level, 32)
        bare, sampled, parent, child, core, ticks = [], [], [], [], [], 0
        for unused in range(rounds):
            bare.append(measure(target, level, n, tokens, srv.model, bc.Record)[0])
            sampler = Sampler(TELEMETRY_GPUS)
            try:
                child0, cpu0 = _cpu_s(sampler.pid), time.process_time()
                sampler.begin()
                parent_cpu = time.process_time() - cpu0
                t0 = time.perf_counter()
                sampled.append(measure(target, level, n, tokens, srv.model, bc.Record)[0])
                t1 = time.perf_counter()
                cpu0 = time.process_time()
                reply = sampler.end()
                window_figures(reply, TELEMETRY_GPUS, sampler.default_sm_mhz, t0, t1, n * tokens)
                parent_cpu += time.process_time() - cpu0
                child.append((_cpu_s(sampler.pid) - child0) / (n * tokens))
                core.append((_cpu_s(sampler.pid) - child0) / max(time.perf_counter() - t0, 1e-9))
                parent.append(parent_cpu / (n * tokens))
                ticks = len(reply["samples"])
            finally:
                sampler.close()
        b, w = sorted(bare)[rounds // 2], sorted(sampled)[rounds // 2]
        print("%6d %14.0f %14.0f %9.2f%% %18.3f %18.3f %13.1f%% %8d" % (
            level, b, w, 100.0 * (w - b) / b, 1e6 * sorted(parent)[rounds // 2], 1e6 * sorted(child)[rounds // 2],
            100.0 * sorted(core)[rounds // 2], ticks))
    print("tok/cpu-s: output tokens per second of the client's own CPU (median of %d); change: with the sampler\n"
          "(noise on a shared host). client us/token: the client's CPU for begin(), end() and the figures,\n"
          "outside the timed level, per token; sampler us/token: the child process's own CPU per token, and as a\n"
          "share of one core over the level (sampler core)." % rounds)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--levels", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--sim", action="store_true", help="target sim/'s SGLang server (not full speed)")
    p.add_argument("--telemetry", action="store_true",
                   help="the client's CPU per token without and with the telemetry sampler on 8 fake GPUs")
    a = p.parse_args()
    if a.telemetry:
        _with_fake_gpus()
    srv = start_sim() if a.sim else start_bench_server("--rate", "0", "--ttft", "0")
    try:
        target = Endpoint(srv.url)
        print("server: %s" % srv.describe)
        if a.telemetry:
            telemetry_cost(target, srv, a.levels, a.tokens)
            return
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
