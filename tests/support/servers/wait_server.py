#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A tiny stand-in for an SGLang/vLLM server, for server_wait's integration tests.

Writes start-up log lines like the real servers (phases a --step apart), refuses
connections until its "weights are loaded", answers /health 503 during warm-up and
200 after, and can crash with a chosen cause. Events (ready, each request) go to
--events as JSON lines with wall-clock times, so tests can measure latencies.
Loopback only.
"""

from __future__ import annotations

import argparse
import datetime
import errno
import http.server
import json
import os
import signal
import socket
import sys
import threading
import time

MODEL = "tests/models/tiny-int4"


class Server(object):
    def __init__(self, args):
        self.args = args
        self.log_file = open(args.log, "a", buffering=1)
        self.ready = False
        self.lock = threading.Lock()
        self.sock = None
        self.port = args.port

    # --- output ------------------------------------------------------------
    def log(self, text, rank=None):
        now = datetime.datetime.now()
        if self.args.flavor == "vllm":
            line = text.replace("{ts}", now.strftime("%m-%d %H:%M:%S"))
        else:
            where = now.strftime("%Y-%m-%d %H:%M:%S") + (" TP%d" % rank if rank is not None else "")
            line = "[%s] %s" % (where, text)
        self.log_file.write(line + "\n")

    def raw(self, text):
        self.log_file.write(text + "\n")

    def event(self, name, **fields):
        if not self.args.events:
            return
        fields.update(event=name, t=time.time())
        with self.lock, open(self.args.events, "a") as handle:
            handle.write(json.dumps(fields) + "\n")

    def step(self):
        time.sleep(self.args.step)

    def crash_here(self, phase):
        if self.args.crash != "none" and self.args.crash_at == phase:
            self.hold()
            return True
        return False

    def hold(self):
        """With --hold FILE, stop here until the test creates FILE (it knows the waiter is watching)."""
        if not self.args.hold:
            return
        deadline = time.monotonic() + 120
        while not os.path.exists(self.args.hold):
            if time.monotonic() > deadline:
                self.raw("hold file %s never appeared" % self.args.hold)
                self.die(code=99)
            time.sleep(0.005)

    def die(self, code=None, sig=None):
        self.event("died", code=code, sig=sig)
        self.log_file.flush()
        if sig:
            os.kill(os.getpid(), sig)  # SGLang's kill_process_tree SIGKILLs itself
        os._exit(code)

    # --- crashes, with the lines the real servers print ---------------------
    def crash(self):
        kind = self.args.crash
        if kind == "oom":
            self.raw("Traceback (most recent call last):")
            self.raw('  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/model_executor/model_runner.py", '
                     "line 1423, in init_memory_pool")
            self.raw("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 95.59 GiB of which 1.12 GiB is free.")
            self.log("Received sigquit from a child process. It usually means the child failed.")
            self.die(sig=signal.SIGKILL)
        if kind == "oom_kv":
            self.raw("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
            self.die(code=1)
        if kind == "warmup_error":
            self.log("Initialization failed. warmup error: Traceback (most recent call last):")
            self.raw("AssertionError: res=<Response [500]>, res.text='Internal Server Error'")
            self.die(sig=signal.SIGKILL)
        if kind == "exit3":
            self.raw("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled "
                     "system error")
            self.die(code=3)
        if kind == "ports_held":
            # sglang 0.5.23's own port check (srt/server_args.py PortArgs, srt/utils/network.py
            # wait_port_available) when the previous server still holds its ports.
            self.log("Port is already in use. dist_init_port=%d port_base=%d detokenizer_port=%d nccl_port=%d "
                     "scheduler_input_port=%d" % tuple(self.port + i for i in range(1, 6)))
            self.raw("Traceback (most recent call last):")
            self.raw("ValueError: dist_init_port at %d is not available in 30 seconds. dist_init_port is used by a "
                     "process already. process.name()='python3' process.status()='sleeping' pid=1" % (self.port + 1))
            self.die(code=1)
        if kind == "silent_exit2":
            self.die(code=2)
        raise SystemExit("unknown crash %r" % kind)

    # --- phases -----------------------------------------------------------
    def reserve_port(self):
        """Port 0: bind now (the port is ours) but listen later, so clients get refused."""
        if self.port:
            return
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def listen(self):
        if self.sock is None:
            self.hold()  # a bind that fails: let the test watch it happen
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.sock.bind(("127.0.0.1", self.port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                # uvicorn's message, then sys.exit(1)
                self.raw("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', %d): "
                         "address already in use" % self.port)
                self.die(code=1)
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), make_handler(self), bind_and_activate=False)
        httpd.socket.close()
        httpd.socket = self.sock
        httpd.server_activate()
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()

    def run_sglang(self):
        pid = os.getpid()
        # The lines of sglang 0.5.23 (srt/entrypoints/engine.py, srt/distributed/bootstrap.py,
        # model_runner.py, memory_pool.py, cuda_graph_setup.py, http_server.py): the key in clear.
        self.log("server_args=%r" % {"model_path": MODEL, "tp_size": 1, "port": self.port,
                                     "api_key": self.args.api_key, "mem_fraction_static": 0.85})
        if self.crash_here("ports"):
            self.crash()
        self.log("Init parallel begin.", 0)
        self.log("Load weight begin. avail mem=94.62 GB", 0)
        if self.crash_here("load"):
            self.crash()
        self.step()
        self.log("Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=21.73 GB, "
                 "mem usage=72.89 GB.", 0)
        if self.crash_here("kv"):
            self.crash()
        self.log("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 2243474, K size: 4.91 GB, V size: 4.91 GB", 0)
        self.log("Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=11.82 GB", 0)
        if self.crash_here("graph"):
            self.crash()
        self.step()
        self.raw("Capturing batches (bs=1 avail_mem=11.18 GB): 100%|##########| 36/36 [00:10<00:00,  3.37it/s]")
        self.log("Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=5.37 s, mem usage=1.44 GB, "
                 "avail mem=10.38 GB.", 0)
        self.listen()
        self.log("INFO:     Started server process [%d]" % pid)
        self.log("INFO:     Waiting for application startup.")
        self.log("INFO:     Application startup complete.")
        self.log("INFO:     Uvicorn running on http://127.0.0.1:%d (Press CTRL+C to quit)" % self.port)
        self.log('INFO:     127.0.0.1:51234 - "GET /model_info HTTP/1.1" 200 OK')
        time.sleep(self.args.warmup)  # /health answers 503 meanwhile
        if self.crash_here("warmup"):
            self.crash()
        self.hold()
        # Kimi-K2.5 reads images: its warm-up is a chat request.
        self.log('INFO:     127.0.0.1:51236 - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        self.turn_ready()
        self.log("The server is fired up and ready to roll!")

    def run_vllm(self):
        pid = os.getpid()
        core = "(EngineCore_DP0 pid=%d) INFO {ts} " % pid
        api = "(APIServer pid=%d) INFO {ts} " % pid
        self.log(api + "[api_server.py:1896] vLLM API server version 0.11.0")
        self.log(api + "[utils.py:233] non-default args: {'model': '%s', 'port': %d, 'api_key': [%r]}"
                 % (MODEL, self.port, self.args.api_key))
        self.log(core + "[core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='%s'" % MODEL)
        self.log(core + "[gpu_model_runner.py:2602] Starting to load model %s..." % MODEL)
        if self.crash_here("load"):
            self.crash()
        self.step()
        self.log(core + "[default_loader.py:267] Loading weights took 0.52 seconds")
        self.log(core + "[gpu_model_runner.py:2653] Model loading took 12.66 GiB and 0.61 seconds")
        if self.crash_here("kv"):
            self.crash()
        self.log(core + "[kv_cache_utils.py:1087] GPU KV cache size: 425,424 tokens")
        self.raw("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|####| 67/67 [00:04<00:00, 15.18it/s]")
        if self.crash_here("graph"):
            self.crash()
        self.step()
        self.log(core + "[gpu_model_runner.py:3480] Graph capturing finished in 7 secs, took 0.95 GiB")
        self.log(core + "[core.py:210] init engine (profile, create kv cache, warmup model) took 25.99 seconds")
        self.listen()
        self.log(api + "[entry.py:139] Starting vLLM server on http://127.0.0.1:%d" % self.port)  # vLLM 0.33.0
        self.log(api.replace("{ts} ", "") + "   Started server process [%d]" % pid)
        self.log(api.replace("{ts} ", "") + "   Waiting for application startup.")
        self.hold()
        self.turn_ready()
        self.log(api.replace("{ts} ", "") + "   Application startup complete.")

    def turn_ready(self):
        with self.lock:
            self.ready = True
        self.event("ready")

    def main(self):
        if self.args.pidfile:
            with open(self.args.pidfile, "w") as handle:
                handle.write("%d\n" % os.getpid())
        if self.args.crash == "bad_argument":
            self.hold()
            # argparse writes usage and the error to stderr (redirected to the log), exit 2.
            self.raw("usage: launch_server.py [-h] --model-path MODEL_PATH [--tp-size TP_SIZE]")
            self.raw("launch_server.py: error: argument --tp-size/--tensor-parallel-size: invalid int value: 'eight'")
            self.die(code=2)
        self.reserve_port()
        if self.args.port_file:
            with open(self.args.port_file + ".tmp", "w") as handle:
                handle.write("%d\n" % self.port)
            os.rename(self.args.port_file + ".tmp", self.args.port_file)
        if self.args.flavor == "vllm":
            self.run_vllm()
        else:
            self.run_sglang()
        while True:  # serve until SIGTERM (default action: exit)
            signal.pause()


def make_handler(server):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, body=None):
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            server.event("request", method=self.command, path=self.path, status=status,
                         auth=self.headers.get("Authorization"))

        def authorized(self):
            key = server.args.api_key
            return not key or self.headers.get("Authorization") == "Bearer " + key

        def do_GET(self):
            if not self.authorized():
                return self.reply(401, {"error": "Unauthorized"})
            if self.path == "/health":
                if server.args.hang_health:
                    time.sleep(3600)
                return self.reply(200 if server.ready else 503)
            if self.path == "/model_info" and server.args.flavor == "sglang":
                return self.reply(200, {"model_path": MODEL, "tokenizer_path": MODEL, "is_generation": True})
            if self.path == "/v1/models":
                return self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            return self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length) or b"{}")
            if not self.authorized():
                return self.reply(401, {"error": "Unauthorized"})
            if self.path == "/v1/completions" and server.ready and payload.get("model") == MODEL:
                return self.reply(200, {"object": "text_completion", "model": MODEL,
                                        "choices": [{"index": 0, "text": " world", "finish_reason": "length"}]})
            return self.reply(400, {"error": "bad request"})

    return Handler


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", required=True)
    parser.add_argument("--flavor", choices=("sglang", "vllm"), default="sglang")
    parser.add_argument("--port", type=int, default=0, help="0: pick a free one and write it to --port-file")
    parser.add_argument("--port-file")
    parser.add_argument("--pidfile")
    parser.add_argument("--events")
    parser.add_argument("--step", type=float, default=0.2, help="seconds between start-up phases")
    parser.add_argument("--warmup", type=float, default=0.3, help="seconds /health answers 503 after listening")
    parser.add_argument("--crash", default="none",
                        choices=("none", "oom", "oom_kv", "warmup_error", "exit3", "bad_argument", "silent_exit2",
                                 "ports_held"))
    parser.add_argument("--crash-at", default="load", choices=("ports", "load", "kv", "graph", "warmup"))
    parser.add_argument("--api-key")
    parser.add_argument("--hold", help="before turning ready (or crashing), wait until this file exists")
    parser.add_argument("--hang-health", action="store_true", help="/health never answers")
    return parser.parse_args(argv)


if __name__ == "__main__":
    Server(parse_args()).main()
    sys.exit(0)
