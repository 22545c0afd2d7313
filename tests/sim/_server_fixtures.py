"""Helpers for tests of the simulated SGLang server: launch, wait, talk, stop.

Every server runs in a session (process group) of its own, so stopping it can end
exactly the tree it started (orphaned workers included) and nothing else.
"""
import http.client
import importlib.util
import json
import os
import signal
import subprocess
import threading
import time

import psutil

from tests.support import paths
from tests.support.net import free_port
from tests.support.polling import poll

SIM = paths.SIM
SGLANG_PYTHON = os.path.join(SIM, "bin", "sglang-python")
SGLANG_CLI = os.path.join(SIM, "bin", "sglang")  # the `sglang serve` entry point
MODELS = os.path.join(SIM, "models")
KIMI = os.path.join(MODELS, "kimi-k2.5-int4")
EAGLE = os.path.join(MODELS, "aq-medai-kimi-k2-eagle3")
MISMATCHED = os.path.join(MODELS, "mismatched-eagle3")
HOST = "127.0.0.1"
FAST = ["--sim-init-seconds", "0.05", "--sim-load-seconds", "0.2", "--sim-kv-seconds", "0.05",
        "--sim-graph-seconds", "0.2", "--sim-warmup-seconds", "0.1"]
# Loaded by path: the neutral core's text model stays out of sys.modules' `_simcore`.
_TEXT_SPEC = importlib.util.spec_from_file_location(
    "sim_core_text", os.path.join(SIM, "pypath", "_simcore", "text.py"))
sim_text = importlib.util.module_from_spec(_TEXT_SPEC)  # every simulated engine's text models
_TEXT_SPEC.loader.exec_module(sim_text)
VLLM_CLI = os.path.join(SIM, "bin", "vllm")
VLLM_PYTHON = SGLANG_PYTHON  # the project python with sim/pypath
VLLM_FAST = ["--sim-init-seconds", "0.05", "--sim-load-seconds", "0.1", "--sim-kv-seconds", "0.05",
             "--sim-graph-seconds", "0.1"]
VLLM_READY = "Application startup complete."


class Server:
    """One simulated server process, started with the real launch command line."""

    def __init__(self, tmp_path, args, env=None, port=None, model=KIMI, tp=8, entry="launch_server"):
        self.port = port or free_port()
        self.log_path = str(tmp_path / ("server-%d.log" % self.port))
        head = [SGLANG_CLI, "serve"] if entry == "serve" else [SGLANG_PYTHON, "-m", "sglang.launch_server"]
        self.cmd = head + ["--model-path", model, "--tp-size", str(tp), "--host", HOST,
                           "--port", str(self.port)] + FAST + list(args)
        full_env = dict(os.environ)
        full_env.pop("FAKE_NVML_ROOT", None)
        full_env.update(env or {})
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env,
                                         start_new_session=True)
        self.pid = self.proc.pid

    # --- observing --------------------------------------------------------------------
    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_log(self, text, timeout=30):
        return poll(lambda: text in self.log() or self._died(text), timeout, what=repr(text))

    def _died(self, text):
        if self.proc.poll() is not None and text not in self.log():
            raise AssertionError("server exited %s before logging %r:\n%s"
                                 % (self.proc.returncode, text, self.log()[-3000:]))
        return False

    def wait_ready(self, timeout=40):
        self.wait_log("The server is fired up and ready to roll!", timeout)
        return self

    def wait_exit(self, timeout=20):
        return poll(lambda: self.proc.poll() is not None, timeout, what="server exit") and self.proc.returncode

    def group(self):
        """Live processes of this server's process group (its whole tree, orphans included)."""
        out = []
        for p in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(p.pid) == self.pid and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except (ProcessLookupError, psutil.Error):
                pass
        return out

    # --- talking ----------------------------------------------------------------------
    def request(self, method, path, body=None, headers=None, timeout=30):
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers=dict({"Content-Type": "application/json"},
                                                               **(headers or {})))
            res = conn.getresponse()
            return res.status, res.read()
        finally:
            conn.close()

    def json(self, method, path, body=None, headers=None):
        status, raw = self.request(method, path, body, headers)
        assert status == 200, (status, raw[:500])
        return json.loads(raw)

    # --- stopping ---------------------------------------------------------------------
    def stop(self):
        """SIGKILL the process group we created, then reap the main process."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        poll(lambda: not self.group(), 10, what="the server's process group to be gone")


def sse_events(res):
    """Yield each `data:` payload of an SSE response (http.client decodes the chunking)."""
    while True:
        line = res.readline()
        if not line:
            return
        line = line.strip()
        if line.startswith(b"data: "):
            payload = line[6:]
            if payload == b"[DONE]":
                return
            yield json.loads(payload)


def stream_completion(conn, max_tokens, extra=None):
    """One streamed /v1/completions on CONN; returns (usage, chunk texts)."""
    body = dict({"model": "m", "prompt": "Say something long.", "max_tokens": max_tokens,
                 "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}},
                **(extra or {}))
    conn.request("POST", "/v1/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    res = conn.getresponse()
    assert res.status == 200, res.status
    usage, texts = None, []
    for ev in sse_events(res):
        if ev.get("usage"):
            usage = ev["usage"]
        texts.extend(c["text"] for c in ev["choices"])
    res.read()  # the closing chunk: the connection is reusable only once it is consumed
    return usage, texts


def measure_throughput(port, concurrency, requests, max_tokens):
    """Output tok/s = server-reported completion tokens / wall time; one pooled connection a thread."""
    per_thread = [requests // concurrency + (1 if i < requests % concurrency else 0)
                  for i in range(concurrency)]
    totals, errors = [0] * concurrency, []
    conns = [http.client.HTTPConnection(HOST, port, timeout=60) for unused in range(concurrency)]
    for c in conns:
        c.connect()
    go = threading.Barrier(concurrency + 1)

    def worker(i):
        try:
            go.wait()
            for unused in range(per_thread[i]):
                usage, _texts = stream_completion(conns[i], max_tokens)
                totals[i] += usage["completion_tokens"]
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    go.wait()
    start = time.monotonic()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    for c in conns:
        c.close()
    assert not errors, errors[:3]
    return sum(totals) / wall, sum(totals)


class VllmServer:
    """`vllm serve` in a session of its own; stop() kills exactly that process group."""

    def __init__(self, tmp_path, root, *args, tp=8, launcher=None, env=None, module=False):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log_path = str(tmp_path / ("vllm-%d.log" % self.port))
        head = [VLLM_PYTHON, "-m", "vllm.entrypoints.cli.main"] if module else [VLLM_CLI]
        self.cmd = head + ["serve", KIMI, "--tensor-parallel-size", str(tp), "--host", "127.0.0.1",
                           "--port", str(self.port)] + VLLM_FAST + list(args)
        full = dict(os.environ)
        full.pop("FAKE_NVML_ROOT", None)
        if root:
            from simlib import fakegpu  # only for a server on a fake GPU host
            full.update(fakegpu.env(root))
        full.update(env or {})
        self.env = full
        with open(self.log_path, "wb") as log:
            launch = launcher or (lambda argv, **kw: subprocess.Popen(argv, start_new_session=True, **kw))
            self.proc = launch(self.cmd, stdout=log, stderr=subprocess.STDOUT, env=full)

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def wait_ready(self, timeout=60):
        def ready():
            if self.proc.poll() is not None and VLLM_READY not in self.log():
                raise AssertionError("vllm serve exited %s:\n%s" % (self.proc.returncode, self.log()[-3000:]))
            return VLLM_READY in self.log()
        poll(ready, timeout, 0.05, "vllm serve to be ready")
        return self

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                         headers=dict({"Content-Type": "application/json"}, **(headers or {})))
            res = conn.getresponse()
            return res.status, res.read()
        finally:
            conn.close()

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
