#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How soon server_drain notices that a server has finished what it had in flight.

On a simulated server (sim/, fast start-up, TP1) with N streaming completions of about 1.5 s in
flight, each run measures

  drain lag   server_drain's return (plugins/module_utils/_server/drain.py drain_server, called
              in-process once every stream is running, poll_interval 0.1 s) minus the last
              stream's end as its client saw it ([DONE] read, time.monotonic())

for SGLang (its /v1/loads) and vLLM (its gauges). Baseline, SGLang only: what a stop without a
drain waits for, SIGTERM sent while the same streams run and the server left to drain itself
(0.5.23's sigterm_watchdog, looking every 5 s: the simulator's --sim-drain-poll-seconds 5) -

  exit lag    the server process's exit (seen by polling every 10 ms) minus the last stream's end

Prints medians (min-max) and baseline / server_drain. A negative lag means the server's count
reached 0 before the client had read its last bytes. Asserts nothing about time.

    .venv/bin/python bench/drain_latency.py [--runs 5] [--streams 8] [--tokens 90] [--no-baseline]
"""
import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # a program: tests.support, then what the tests see (tests/support/syspath.py)
from tests.support import syspath  # noqa: E402  pylint: disable=wrong-import-position

syspath.install()
sys.path.insert(0, os.path.join(REPO, "tests", "sim"))  # the simulated servers' launchers

from _server_fixtures import Server, VllmServer  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._server.drain import (  # noqa: E402
    drain_server,
    read_in_flight,
)
from tests.support import sse_client  # noqa: E402
from tests.support.polling import poll  # noqa: E402

POLL_INTERVAL = 0.1


def start_server(engine, tmp, extra=()):
    if engine == "sglang":
        return Server(tmp, list(extra), tp=1).wait_ready()
    return VllmServer(tmp, None, *extra, tp=1).wait_ready()


def start_streams(server, engine, streams, tokens):
    """N streams, returned once the server counts all of them in flight."""
    load = sse_client.Streams(server.port)
    for i in range(streams):
        load.start(i, tokens)
    client = HttpClient("http://127.0.0.1:%d" % server.port, accept=None)
    poll(lambda: sum(read_in_flight(client, registry.get(engine))) == streams, 20,
         what="%d requests in flight" % streams)
    return load


def check(load, tokens):
    results = load.join(60)
    bad = [k for k, r in results.items() if not r["done"] or len(r["texts"]) != tokens]
    if bad:
        sys.exit("streams %s did not complete: %s" % (bad, [results[k] for k in bad]))


def drain_lag(engine, tmp, runs, streams, tokens):
    """[seconds] of server_drain's return minus the last stream's end, one server for all runs."""
    server = start_server(engine, tmp)
    lags = []
    try:
        for unused in range(runs):
            load = start_streams(server, engine, streams, tokens)
            out = drain_server({"base_url": "http://127.0.0.1:%d" % server.port, "engine": engine,
                                "drain_timeout": 60, "poll_interval": POLL_INTERVAL, "request_timeout": 5})
            returned = time.monotonic()
            check(load, tokens)
            if not out["drained"]:
                sys.exit("%s: server_drain returned without draining: %s" % (engine, out))
            lags.append(returned - load.last_end())
    finally:
        server.stop()
    return lags


def exit_lag(tmp, runs, streams, tokens):
    """[seconds] of the SGLang process's exit after SIGTERM minus the last stream's end (a server a run)."""
    lags = []
    for run in range(runs):
        run_dir = Path(tmp) / ("sigterm-%d" % run)
        run_dir.mkdir()
        server = start_server("sglang", run_dir, ["--sim-drain-poll-seconds", "5"])
        try:
            load = start_streams(server, "sglang", streams, tokens)
            os.kill(server.pid, signal.SIGTERM)
            poll(lambda proc=server.proc: proc.poll() is not None, 60, 0.01, "the server's exit")
            exited = time.monotonic()
            check(load, tokens)
            lags.append(exited - load.last_end())
        finally:
            server.stop()
    return lags


def summary(values):
    return "%.3f (%.3f-%.3f)" % (statistics.median(values), min(values), max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=90, help="tokens a stream (~1.5 s at the simulators' rates)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the SIGTERM-only SGLang runs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="drain-latency-") as tmp:
        rows = {}
        for engine in ("sglang", "vllm"):
            engine_dir = Path(tmp) / engine
            engine_dir.mkdir()
            rows[engine] = drain_lag(engine, engine_dir, args.runs, args.streams, args.tokens)
        baseline = None if args.no_baseline else exit_lag(tmp, args.runs, args.streams, args.tokens)
    print("drain lag: server_drain's return - the last stream's end; %d streams of %d tokens, %d runs, "
          "poll_interval %.1f s; seconds, median (min-max)" % (args.streams, args.tokens, args.runs, POLL_INTERVAL))
    for engine, lags in rows.items():
        print("  %-8s server_drain          %s" % (engine, summary(lags)))
    if baseline:
        print("  %-8s SIGTERM, wait exit    %s   (0.5.23's 5 s watchdog, no server_drain)"
              % ("sglang", summary(baseline)))
        print("  ratio (SIGTERM exit lag / server_drain lag, medians, sglang): %.1fx"
              % (statistics.median(baseline) / max(statistics.median(rows["sglang"]), 1e-3)))


if __name__ == "__main__":
    main()
