# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start (and stop, by the PID started) the servers the benches measure against."""
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
BENCH_SERVER = os.path.join(REPO, "tests", "integration", "_bench_server.py")
SIM_PY = os.path.join(REPO, "tests", "sim", "bin", "sglang-python")
SIM_MODEL = os.path.join(REPO, "tests", "sim", "models", "kimi-k2.5-int4")


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
