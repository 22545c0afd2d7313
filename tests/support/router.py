# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The real sglang-router 0.3.2 (build/router/bin/smg, `make setup`) on loopback, and tiny workers.

start_router() runs the binary on 127.0.0.1 with its metrics listener on 127.0.0.1 too, under
the test's OwnProcesses (stopped by pidfd, never by name), and returns once its /health answers
and it lists the workers it was started with as healthy.
TinyWorker is an HTTP server thread of the test answering every GET (the router's /health,
/server_info, /model_info probes) with `health_status` (200 unless the test changes it).
"""
import http.server
import json
import os
import subprocess
import threading
import urllib.request

from tests.support.net import LOOPBACK, free_port
from tests.support.paths import REPO
from tests.support.polling import poll

ROUTER_BIN = os.path.join(REPO, "build", "router", "bin", "smg")


class RealRouter:
    def __init__(self, proc, port, metrics_port, log_path):
        self.proc = proc
        self.pid = proc.pid
        self.url = "http://%s:%d" % (LOOPBACK, port)
        self.metrics_url = "http://%s:%d/metrics" % (LOOPBACK, metrics_port)
        self.log_path = log_path


def router_argv(port, metrics_port, worker_urls=(), admin_key=None):
    argv = [ROUTER_BIN, "launch", "--host", LOOPBACK, "--port", str(port), "--prometheus-host", LOOPBACK,
            "--prometheus-port", str(metrics_port), "--policy", "round_robin", "--shutdown-grace-period-secs", "1"]
    if worker_urls:
        argv += ["--worker-urls"] + list(worker_urls)
    if admin_key:
        argv += ["--control-plane-api-keys", "tests:tests:admin:%s" % admin_key]
    return argv


def start_router(own, log_dir, worker_urls=(), admin_key=None, timeout=60):
    """The real router, answering on its URL; `own` (OwnProcesses) stops it."""
    assert os.access(ROUTER_BIN, os.X_OK), "%s is missing: `make setup` installs sglang-router 0.3.2 there" % ROUTER_BIN
    port, metrics_port = free_port(), free_port()
    log_path = os.path.join(str(log_dir), "router-%d.log" % port)
    with open(log_path, "wb") as log:
        proc = own.popen(router_argv(port, metrics_port, worker_urls, admin_key), stdout=log,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    router = RealRouter(proc, port, metrics_port, log_path)

    def up():
        if proc.poll() is not None:
            raise AssertionError("the router exited %s; its log: %s" % (proc.returncode, _tail(log_path)))
        try:
            with urllib.request.urlopen(router.url + "/health", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False
    poll(up, timeout=timeout, interval=0.05, what="the router's /health at %s" % router.url)
    # The workers of --worker-urls join in the background after /health answers.
    poll(lambda: healthy_urls(router, admin_key) >= set(worker_urls), timeout=timeout, interval=0.05,
         what="workers %s healthy in the router" % list(worker_urls))
    return router


def healthy_urls(router, admin_key=None):
    """The URLs the router lists as healthy (GET /workers)."""
    request = urllib.request.Request(router.url + "/workers")
    if admin_key:
        request.add_header("Authorization", "Bearer %s" % admin_key)
    with urllib.request.urlopen(request, timeout=5) as answer:
        return {w["url"] for w in json.load(answer)["workers"] if w["is_healthy"]}


def _tail(path, lines=20):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return "".join(handle.readlines()[-lines:])


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = json.dumps({"path": self.path}).encode()
        self.send_response(self.server.worker.health_status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.worker.seen.append((self.path, self.headers.get("Authorization")))


class TinyWorker:
    """A loopback HTTP server thread standing for a worker the router probes."""

    def __init__(self, health_status=200):
        self.health_status = health_status
        self.seen = []
        self.server = http.server.ThreadingHTTPServer((LOOPBACK, 0), _Handler)
        self.server.worker = self
        self.url = "http://%s:%d" % (LOOPBACK, self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
