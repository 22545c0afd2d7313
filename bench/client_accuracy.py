#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How close llm_benchmark's output tok/s is to the truth, at concurrency 1 and 128.

Against tests/support/servers/standin.py with a known per-stream rate, sized
like the measured SGLang figures (63.6 tok/s single stream, about 2,400 tok/s at
128). Two references, both from this run:
  ideal   the server's schedule: c * n / (ttft + (n - 1) / rate)
  server  the server's own count over its own window (first request in to
          last byte out, GET /stats), for exactly the measured requests
The client/server ratio isolates the client's error (target: within 2%); the
ideal ratio also includes the server's own lateness at high concurrency.
Prints ratios; asserts nothing about time.

    .venv/bin/python bench/client_accuracy.py
    .venv/bin/python bench/client_accuracy.py --sim   # the simulated SGLang (calibrated 63.6 / 2,370)
    .venv/bin/python bench/client_accuracy.py --variable [--sim]

--variable: requests of random lengths (EOS-like early stops, 1-4 tokens a chunk) at
concurrency 1, 16, 64, 128. Reference: the server's own count of the tokens it wrote
inside llm_benchmark's window (GET /window, same CLOCK_MONOTONIC), over the window.
Also prints the old figure (counted requests' tokens only) to show the bias it had.
With --sim as well: the simulated EAGLE-3 server, client tokens over each level
against the server's sglang:generation_tokens_total delta (server_ratio).

--rates: the simulated EAGLE-3 server at concurrency 16 and 64 (256 in / 256 out,
ignore_eos), 192 counted requests a level and the default count (two waves): output
tok/s and requests/s against the server's own counters over the level
(sglang:generation_tokens_total, sglang:num_requests_total), with their ratios (and
the counted completions alone over the window, for comparison), the per-token and
per-chunk ITL medians and the accept length.
"""
import argparse
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "build", "collections"))
sys.path.insert(0, HERE)

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.run import run_benchmark  # noqa: E402

BENCH_SERVER = os.path.join(REPO, "tests", "support", "servers", "standin.py")
SIM_PY = os.path.join(REPO, "sim", "bin", "sglang-python")
SIM_MODEL = os.path.join(REPO, "sim", "models", "kimi-k2.5-int4")

# Servers the benches measure against (client_ceiling.py imports these too);
# each is stopped by the PID (or the session) this script started.


class Started:
    def __init__(self, proc, url, model, describe, group=False):
        self.proc, self.url, self.model, self.describe, self.group = proc, url, model, describe, group

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc.poll() is None:
            if self.group:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the session we created for it
            else:
                self.proc.terminate()
        self.proc.wait(10)


def start_bench_server(*args):
    proc = subprocess.Popen([sys.executable, BENCH_SERVER, "--port", "0"] + list(args), stdout=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    line = proc.stdout.readline().decode() if sel.select(timeout=10) else ""
    sel.close()
    if not line.startswith("READY "):
        proc.kill()
        proc.wait()
        raise SystemExit("test server did not start")
    return Started(proc, "http://127.0.0.1:%s" % line.split()[1], "test-model",
                   "standin.py %s" % " ".join(args))


def start_sim(*args):
    if not os.path.exists(SIM_PY):
        raise SystemExit("--sim: %s is absent" % SIM_PY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [SIM_PY, "-m", "sglang.launch_server", "--model-path", SIM_MODEL, "--host", "127.0.0.1",
           "--port", str(port), "--tp-size", "1", "--enable-metrics"] + list(args)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    srv = Started(proc, "http://127.0.0.1:%d" % port, None, "simulated SGLang " + " ".join(args), group=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(srv.url + "/health", timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            srv.stop()
            raise SystemExit("simulated server did not become ready")
        time.sleep(0.05)
    srv.model = srv.get("/v1/models")["data"][0]["id"]
    return srv


CASES = [  # concurrency, per-stream tok/s, ttft s, output tokens
    (1, 63.6, 0.10, 64),
    (128, 20.0, 0.20, 32),
]
SIM_CALIBRATED = {1: 63.6, 128: 2370.0}


def params(url, level, n):
    return dict(base_url=url, model=None, levels=[level], requests_per_level=None, warmup_requests=0,
                input_len=16, output_len=n, api="completions", temperature=0.0, seed=0, request_timeout=120.0,
                max_error_samples=3, api_key=None, validate_certs=True, output=None, flavor="auto",
                request_rates=None, burstiness=1.0, max_concurrency=None, range_ratio=1.0, ignore_eos=True,
                slo_ttft_ms=None, slo_tpot_ms=None, slo_e2e_ms=None, connection="keep_alive",
                progress_file=None)


VARIABLE_LEVELS = (1, 16, 64, 128)


def variable():
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench import load as _bench_load
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench import stats as _bench_stats
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import request_body
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint
    srv = start_bench_server("--rate", "60", "--ttft", "0.05", "--random-stop", "0.1", "--random-chunk", "4",
                             "--seed", "11")
    print("random lengths (stop uniform in [10%, 100%] of 128), 1-4 tokens a chunk at 60 tok/s a stream")
    print("%5s %12s %12s %12s %12s %12s" % ("conc", "measured", "server", "meas/server", "old figure",
                                            "old/server"))
    try:
        for c in VARIABLE_LEVELS:
            n, w = 2 * c if c > 1 else 8, c
            bodies = [request_body("completions", "test-model", 16, 128, 1000 * c + i, 0.0) for i in range(w + n)]
            records = _bench_load.run_level(Endpoint(srv.url), "/v1/completions", bodies, c, 120.0)
            lv = _bench_stats.level_metrics(c, records[w:], w, 3, warmup=records[:w])
            t0, t1 = _bench_stats.window_bounds(records[w:])
            server = srv.get("/window?t0=%r&t1=%r" % (t0, t1))["tokens"] / (t1 - t0)
            old = lv["counted_output_tokens"] / lv["duration_s"]
            print("%5d %12.1f %12.1f %11.4fx %12.1f %11.4fx" % (c, lv["output_tok_s"], server,
                                                                lv["output_tok_s"] / server, old, old / server))
    finally:
        srv.stop()


def start_eagle3_sim():
    draft = os.path.join(REPO, "sim", "models", "aq-medai-kimi-k2-eagle3")
    return start_sim("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", draft,
                     "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                     "--speculative-num-draft-tokens", "4")


def sim_eagle3():
    srv = start_eagle3_sim()
    print("simulated EAGLE-3 (input 128, output 128, ignore_eos), server counter over each level")
    print("%5s %12s %12s %14s %12s %8s" % ("conc", "window tok/s", "server tok/s", "client/counter",
                                           "accept len", "ITL est"))
    try:
        for c in VARIABLE_LEVELS:
            p = params(srv.url, c, 128)
            p.update(input_len=128, warmup_requests=None)
            lv = run_benchmark(p)["levels"][0]
            print("%5d %12.1f %12.1f %13.4fx %12s %8s" % (c, lv["output_tok_s"], lv["server_tok_s"],
                                                          lv["server_ratio"], lv["accept_length"],
                                                          lv["itl_estimated"]))
    finally:
        srv.stop()


RATE_LEVELS = (16, 64)


def sim_rates():
    srv = start_eagle3_sim()
    print("simulated EAGLE-3 (input 256, output 256, ignore_eos); server: its counters over the level")
    print("%5s %8s %9s %12s %8s %8s %12s %8s %14s %12s %12s %7s" % (
        "conc", "requests", "tok/s", "server tok/s", "ratio", "req/s", "server req/s", "ratio",
        "counted/server", "ITL tok p50", "ITL chunk p50", "accept"))
    try:
        for c in RATE_LEVELS:
            for n in (192, None):
                p = params(srv.url, c, 256)
                p.update(input_len=256, warmup_requests=None, requests_per_level=n)
                lv = run_benchmark(p)["levels"][0]
                counted = lv["completed"] / lv["duration_s"]  # counted completions only, for comparison
                print("%5d %8d %9.1f %12.1f %7.4fx %8.3f %12.3f %7.4fx %13.4fx %12.2f %12.2f %7s" % (
                    c, lv["requests"], lv["output_tok_s"], lv["server_tok_s"],
                    lv["output_tok_s"] / lv["server_tok_s"], lv["requests_per_s"], lv["server_req_s"],
                    lv["requests_per_s"] / lv["server_req_s"], counted / lv["server_req_s"],
                    lv["itl_ms"]["p50"], lv["itl_chunk_ms"]["p50"], lv["accept_length"]))
    finally:
        srv.stop()


def known_rate():
    print("%5s %12s %12s %12s %14s %14s" % ("conc", "measured", "ideal", "server", "meas/server", "meas/ideal"))
    for c, rate, ttft, n in CASES:
        srv = start_bench_server("--rate", str(rate), "--ttft", str(ttft))
        try:
            srv.get("/stats?reset=1")
            lv = run_benchmark(params(srv.url, c, n))["levels"][0]
            server = srv.get("/stats")["window"]["tok_s"]
        finally:
            srv.stop()
        ideal = c * n / (ttft + (n - 1) / rate)
        m = lv["output_tok_s"]
        print("%5d %12.1f %12.1f %12.1f %13.4fx %13.4fx%s" % (
            c, m, ideal, server, m / server, m / ideal, "  (%d failed)" % lv["failed"] if lv["failed"] else ""))


def sim():
    srv = start_sim()
    try:
        print("%5s %12s %12s %14s" % ("conc", "measured", "calibrated", "meas/calib"))
        for c in (1, 128):
            p = params(srv.url, c, 64 if c == 1 else 128)
            p["warmup_requests"] = None  # one per connection, as the module does by default
            lv = run_benchmark(p)["levels"][0]
            print("%5d %12.1f %12.1f %13.4fx" % (c, lv["output_tok_s"], SIM_CALIBRATED[c],
                                                 lv["output_tok_s"] / SIM_CALIBRATED[c]))
    finally:
        srv.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", action="store_true")
    ap.add_argument("--variable", action="store_true", help="random lengths (and EAGLE-3 with --sim)")
    ap.add_argument("--rates", action="store_true", help="tok/s and req/s against the server's counters")
    args = ap.parse_args()
    if args.rates:
        sim_rates()
    elif args.variable:
        variable()
        if args.sim:
            sim_eagle3()
    elif args.sim:
        sim()
    else:
        known_rate()
