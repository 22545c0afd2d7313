#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How close llm_benchmark's output tok/s is to the truth, at concurrency 1 and 128.

Against tests/integration/_bench_server.py with a known per-stream rate, sized
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

from ansible_collections.gpufleet.serving.plugins.module_utils._bench_run import run_benchmark  # noqa: E402

BENCH_SERVER = os.path.join(REPO, "tests", "integration", "_bench_server.py")
SIM_PY = os.path.join(REPO, "tests", "sim", "bin", "sglang-python")
SIM_MODEL = os.path.join(REPO, "tests", "sim", "models", "kimi-k2.5-int4")

# Servers the benches measure against (client_ceiling.py imports these too);
# each is stopped by the PID (or the session) this script started.


class Started(object):
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
                   "_bench_server.py %s" % " ".join(args))


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
                max_error_samples=3, api_key=None, validate_certs=True, output=None, flavor="auto")


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
    if ap.parse_args().sim:
        sim()
    else:
        known_rate()
