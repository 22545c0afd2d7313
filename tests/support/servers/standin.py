#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stand-in server of the tests and bench/ (stdlib only, loopback only).

Why it exists beside the simulator (sim/, which imitates SGLang 0.5.23 and vLLM 0.33.0 from
their wheels and is what every test of an engine's behaviour starts): it does what the
simulator cannot, on purpose. Its streams follow an exact schedule, so a benchmark's
throughput and latency arithmetic has a known answer (expected_tok_s), and it reports its own
view of them (/stats, /window); it injects faults on demand (every Nth request fails, early
stops, odd chunk sizes, a context-length refusal, a /health that hangs); and its start-up
(--log, SGLang's log lines only) stops where the test says (--hold) and crashes at a chosen
phase with a chosen cause, so server_wait's latency tests measure instead of sleeping. Its
/metrics carry only the counters the benchmark reads, under SGLang's or vLLM's names
(--flavor), with no version of their own.

One OpenAI-compatible HTTP server, configured by its options; two ways to start it:

Serving at once (llm_benchmark, benchmark_report, bench/client_*.py): listens from the
start, prints `READY <port>`; SIGTERM/SIGINT stop it. Every request streams its tokens on an
absolute schedule: chunk j (of K tokens) leaves at start + ttft + j * K / rate, so one stream
runs at `rate` tok/s and the ideal throughput of c streams in closed loop is known exactly:
c * n / (ttft + (ceil(n/K) - 1) * K / rate) for n output tokens (expected_tok_s()).
Variable workloads: --random-stop F ends each request at a length drawn uniformly in
[max(1, F x max_tokens), max_tokens] whatever ignore_eos says (EOS-like early stops);
--random-chunk M sends 1..M tokens a chunk (a speculative server); --chunk-pattern
"k:ms,..." cycles chunks of k tokens sent ms after the previous one (known per-token gaps
for ITL tests). Seeded by --seed and the POST number.

    python standin.py --port 0 --rate 50 --ttft 0.05 --tokens-per-chunk 3 --flavor sglang --spec --fail-every 5

A start-up first (--log FILE; server_wait's tests): writes SGLang 0.5.23's start-up log
lines (phases a --step apart), refuses connections until its "weights are loaded",
answers /health 503 during warm-up (--warmup) and 200 after, and can crash with a chosen
cause (--crash, --crash-at). --hold FILE stops it before turning ready (or crashing) until
the test creates FILE; --port-file/--pidfile say where it runs; SIGTERM's default action
ends it, as it ends the real launcher. Events (ready, each request) go to --events as JSON
lines with wall-clock times, so tests can measure latencies.

Endpoints: GET /health /v1/models /model_info (sglang) /metrics /server_info (sglang)
/stats[?reset=1] (the server's own tok/s since the last reset: tokens / (first request in -
last byte out)); GET /window?t0=T0&t1=T1: tokens written with time.perf_counter() in [T0, T1]
(CLOCK_MONOTONIC, the client's clock too on Linux); POST /v1/completions and
/v1/chat/completions: streamed as above when the request says "stream", else one JSON
completion (once ready, for the served model). --api-key KEY: every request needs
"Authorization: Bearer KEY" (401 otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import datetime
import errno
import http
import json
import math
import os
import random
import signal
import socket
import sys
import threading
import time

COUNTER_START = 1000000.0  # counters start far from zero: a reader must take deltas
STARTUP_MODEL = "tests/models/tiny-int4"  # the model a simulated start-up loads
SERVING_MODEL = "test-model"
LOOPBACK = "127.0.0.1"


class State:
    def __init__(self, args):
        self.args = args
        self.ready = not args.log  # a start-up turns ready at its end
        self.lock = threading.Lock()
        self.posts = 0
        self.requests = 0
        self.tokens = COUNTER_START          # generation tokens
        self.steps = COUNTER_START           # sglang verify calls / vllm drafts
        self.accepted = COUNTER_START * 0.5  # vllm accepted draft tokens (lifetime rate 1.5)
        self.writes = []                     # (perf_counter, tokens) of every content chunk written
        self.itl = []                        # per-token gaps (s) as written, every stream since the last reset
        self.max_posts_per_connection = 0
        self.reset()

    def tokens_between(self, t0, t1):
        times = [w[0] for w in self.writes]
        lo, hi = bisect.bisect_left(times, t0), bisect.bisect_right(times, t1)
        return sum(w[1] for w in self.writes[lo:hi])

    def reset(self):
        """The server's own view of the streams since the last reset (GET /stats?reset=1)."""
        self.window = {"requests": 0, "tokens": 0, "first_recv": None, "last_write": None}

    def served(self, t_recv, t_last, tokens):
        w = self.window
        w["requests"] += 1
        w["tokens"] += tokens
        w["first_recv"] = t_recv if w["first_recv"] is None else min(w["first_recv"], t_recv)
        w["last_write"] = t_last if w["last_write"] is None else max(w["last_write"], t_last)

    def event(self, name, **fields):
        if not self.args.events:
            return
        fields.update(event=name, t=time.time())
        with self.lock, open(self.args.events, "a") as handle:
            handle.write(json.dumps(fields) + "\n")

    def turn_ready(self):
        with self.lock:
            self.ready = True
        self.event("ready")


# ---- HTTP -----------------------------------------------------------------------------------

def _sse(obj):
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunked(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def _response(writer, st, req, status, body=b"", content_type="application/json"):
    writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
                 % (status, http.HTTPStatus(status).phrase.encode(), content_type.encode(), len(body), body))
    st.event("request", method=req["method"], path=req["path"], status=status, auth=req["auth"])


def _json_response(writer, st, req, status, obj=None):
    _response(writer, st, req, status, json.dumps(obj).encode() if obj is not None else b"")


def metrics_text(st):
    a = st.args
    m = 'model_name="%s"' % a.model
    if a.flavor == "sglang":
        lines = [
            "# TYPE sglang:generation_tokens_total counter",
            "sglang:generation_tokens_total{%s} %r" % (m, st.tokens),
            "sglang:generation_tokens_created{%s} 1.7e+09" % m,
        ]
        if a.spec:
            lines += [
                "# TYPE sglang:spec_verify_calls_total counter",
                "sglang:spec_verify_calls_total{%s} %r" % (m, st.steps),
                "sglang:spec_accept_length{%s} 1.0" % m,
            ]
        return "\n".join(lines) + "\n"
    if a.flavor == "vllm":
        lines = ["vllm:generation_tokens_total{%s} %r" % (m, st.tokens)]
        if a.spec:
            lines += [
                'vllm:spec_decode_num_drafts_total{engine="0",%s} %r' % (m, st.steps),
                'vllm:spec_decode_num_accepted_tokens_total{engine="0",%s} %r' % (m, st.accepted),
            ]
        return "\n".join(lines) + "\n"
    return ""


async def stream(writer, st, req, chat):
    a = st.args
    n = int(req.get("max_tokens") or 16)
    if a.eos_at and not req.get("ignore_eos"):
        n = min(n, a.eos_at)
    rng = random.Random(a.seed * 1000003 + st.posts)
    if a.random_stop:
        n = rng.randint(max(1, int(a.random_stop * n)), n)
    pattern = [tuple(int(x) for x in p.split(":")) for p in a.chunk_pattern.split(",")] if a.chunk_pattern else None
    k = a.tokens_per_chunk
    opts = req.get("stream_options") or {}
    continuous = bool(opts.get("continuous_usage_stats")) and not a.no_continuous_usage
    prompt = req.get("prompt") if not chat else req["messages"][-1]["content"]
    p_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
    obj_type = "chat.completion.chunk" if chat else "text_completion"
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    sent = 0
    j = 0
    due = t0 + a.ttft
    last_write = None
    while sent < n:
        if pattern:
            kk, gap_ms = pattern[j % len(pattern)]
            due += gap_ms / 1000.0 if j else 0.0
        else:
            kk = rng.randint(1, a.random_chunk) if a.random_chunk else k
            due += (kk / a.rate if a.rate > 0 else 0.0) if j else 0.0
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        kk = min(kk, n - sent)
        sent += kk
        text = "".join(" w%d" % (sent - kk + i) for i in range(kk))
        choice = {"index": 0, "finish_reason": None}
        if chat:
            choice["delta"] = {"content": text} if j else {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        chunk = {"id": "x", "object": obj_type, "model": a.model, "choices": [choice]}
        if continuous:
            chunk["usage"] = {"prompt_tokens": p_tokens, "completion_tokens": sent,
                              "total_tokens": p_tokens + sent}
        writer.write(_chunked(_sse(chunk)))
        now = time.perf_counter()
        st.writes.append((now, kk))
        if last_write is not None:  # the server's own per-token ITL: the gap shared by the chunk's tokens
            st.itl += [(now - last_write) / kk] * kk
        last_write = now
        if not a.count_on_finish:
            st.tokens += kk
        st.steps += 1
        st.accepted += kk - 1
        j += 1
        if writer.transport.get_write_buffer_size() > 1 << 16:
            await writer.drain()
    finish = "length" if sent >= int(req.get("max_tokens") or 16) else "stop"
    last = {"index": 0, "finish_reason": finish}
    last["delta" if chat else "text"] = {} if chat else ""
    tail = _sse({"id": "x", "object": obj_type, "model": a.model, "choices": [last]})
    if opts.get("include_usage"):
        tail += _sse({"id": "x", "object": obj_type, "model": a.model, "choices": [],
                      "usage": {"prompt_tokens": p_tokens, "completion_tokens": sent,
                                "total_tokens": p_tokens + sent}})
    tail += b"data: [DONE]\n\n"
    writer.write(_chunked(tail) + b"0\r\n\r\n")
    if a.count_on_finish:  # as SGLang 0.5.23: observe_one_finished_request
        st.tokens += sent
    st.served(t0, loop.time(), sent)
    await writer.drain()


async def answer_get(writer, st, req):
    a, path = st.args, req["path"]
    if path == "/health":
        if a.hang_health:
            await asyncio.sleep(3600)
        _json_response(writer, st, req, 200 if st.ready else 503)
    elif path == "/v1/models":
        owner = a.flavor if a.flavor != "none" else "someone"
        _json_response(writer, st, req, 200, {"object": "list",
                                              "data": [{"id": a.model, "object": "model", "owned_by": owner}]})
    elif path == "/model_info" and a.flavor == "sglang":
        _json_response(writer, st, req, 200, {"model_path": a.model, "tokenizer_path": a.model, "is_generation": True})
    elif path == "/metrics" and a.flavor in ("sglang", "vllm") and a.metrics:
        _response(writer, st, req, 200, metrics_text(st).encode(), "text/plain; version=0.0.4")
    elif path == "/server_info" and a.flavor == "sglang":
        _json_response(writer, st, req, 200, {
            "tp_size": 1,
            "speculative_algorithm": "EAGLE3" if a.spec else None,
            "internal_states": [{"avg_spec_accept_length": a.server_info_accept}],
        })
    elif path.startswith("/window?"):
        q = dict(kv.split("=", 1) for kv in path.split("?", 1)[1].split("&"))
        _json_response(writer, st, req, 200, {"tokens": st.tokens_between(float(q["t0"]), float(q["t1"]))})
    elif path.startswith("/stats"):
        w = dict(st.window)
        span = (w["last_write"] - w["first_recv"]) if w["requests"] else None
        w["tok_s"] = w["tokens"] / span if span else None
        _json_response(writer, st, req, 200, {"posts": st.posts, "requests": st.requests, "window": w,
                                              "max_posts_per_connection": st.max_posts_per_connection,
                                              "itl_s": st.itl})
        if path.endswith("reset=1"):
            st.reset()
            st.itl = []
    else:
        _json_response(writer, st, req, 404, {"detail": "Not Found"})


async def answer_post(writer, st, req, body, posts_here):
    a, path = st.args, req["path"]
    if path not in ("/v1/completions", "/v1/chat/completions"):
        return _json_response(writer, st, req, 404, {"detail": "Not Found"})
    payload = json.loads(body or b"{}")
    if not payload.get("stream"):  # one JSON completion, for the served model once ready
        if path == "/v1/completions" and st.ready and payload.get("model") == a.model:
            return _json_response(writer, st, req, 200, {
                "object": "text_completion", "model": a.model,
                "choices": [{"index": 0, "text": " world", "finish_reason": "length"}]})
        return _json_response(writer, st, req, 400, {"error": "bad request"})
    st.posts += 1
    st.max_posts_per_connection = max(st.max_posts_per_connection, posts_here)
    if a.fail_every and st.posts % a.fail_every == 0:
        return _json_response(writer, st, req, 500, {"error": {"message": "injected failure %d" % st.posts}})
    chat = path.endswith("chat/completions")
    if a.context_len:
        prompt = payload.get("messages") if chat else payload.get("prompt")
        words = sum(len(str(m.get("content")).split()) for m in prompt) if chat else len(str(prompt).split())
        if words >= a.context_len:  # SGLang's refusal (srt/managers/tokenizer_manager.py _validate_input_ids)
            st.event("request", method=req["method"], path=path, status=400, auth=req["auth"], body=payload)
            return _json_response(writer, st, req, 400, {
                "object": "error", "type": "BadRequestError", "code": 400,
                "message": "The input (%d tokens) is longer than the model's context length (%d tokens)."
                           % (words, a.context_len)})
    st.requests += 1
    await stream(writer, st, payload, chat)
    st.event("request", method=req["method"], path=path, status=200, auth=req["auth"], body=payload)
    return None


async def handle(reader, writer, st):
    posts_here = 0
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {}
            for line in lines[1:]:
                key, unused, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length") or 0))
            req = {"method": method, "path": path, "auth": headers.get("authorization")}
            if st.args.api_key and req["auth"] != "Bearer " + st.args.api_key:
                _json_response(writer, st, req, 401, {"error": "Unauthorized"})
            elif method == "GET":
                await answer_get(writer, st, req)
            elif method == "POST":
                posts_here += 1
                await answer_post(writer, st, req, body, posts_here)
            else:
                _json_response(writer, st, req, 404, {"detail": "Not Found"})
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def _serve(st, sock):
    return await asyncio.start_server(lambda r, w: handle(r, w, st), sock=sock, backlog=1024)


# ---- serving at once ------------------------------------------------------------------------

async def serve_now(args):
    st = State(args)
    server = await asyncio.start_server(lambda r, w: handle(r, w, st), LOOPBACK, args.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write("READY %d\n" % port)
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


# ---- a start-up first -----------------------------------------------------------------------

class Startup:
    """The start-up of a real server, written to --log; HTTP is served by the loop above."""

    def __init__(self, args):
        self.args = args
        self.state = State(args)
        self.log_file = open(args.log, "a", buffering=1)
        self.sock = None
        self.port = args.port
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    # --- output ------------------------------------------------------------
    def log(self, text, rank=None):
        where = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S") + (" TP%d" % rank if rank is not None else "")
        self.log_file.write("[%s] %s\n" % (where, text))

    def raw(self, text):
        self.log_file.write(text + "\n")

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
        self.state.event("died", code=code, sig=sig)
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
        self.sock.bind((LOOPBACK, 0))
        self.port = self.sock.getsockname()[1]

    def listen(self):
        if self.sock is None:
            self.hold()  # a bind that fails: let the test watch it happen
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.sock.bind((LOOPBACK, self.port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                # uvicorn's message, then sys.exit(1)
                self.raw("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', %d): "
                         "address already in use" % self.port)
                self.die(code=1)
        asyncio.run_coroutine_threadsafe(_serve(self.state, self.sock), self.loop).result(timeout=10)

    def run_sglang(self):
        pid = os.getpid()
        # The lines of sglang 0.5.23 (srt/entrypoints/engine.py, srt/distributed/bootstrap.py,
        # model_runner.py, memory_pool.py, cuda_graph_setup.py, http_server.py): the key in clear.
        self.log("server_args=%r" % {"model_path": self.args.model, "tp_size": 1, "port": self.port,
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
        self.state.turn_ready()
        self.log("The server is fired up and ready to roll!")

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
        self.run_sglang()
        while True:  # serve until SIGTERM (default action: exit)
            signal.pause()


# ---- options --------------------------------------------------------------------------------

def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default=LOOPBACK, choices=[LOOPBACK])  # loopback only
    p.add_argument("--port", type=int, default=0, help="0: pick a free one (READY line, or --port-file)")
    p.add_argument("--model", help="served model (default: %s; %s with --log)" % (SERVING_MODEL, STARTUP_MODEL))
    p.add_argument("--flavor", default="sglang", choices=["sglang", "vllm", "none"])
    p.add_argument("--api-key", help="every request needs Authorization: Bearer KEY")
    # streaming
    p.add_argument("--rate", type=float, default=50.0, help="tokens/s of one stream; 0 = no delay")
    p.add_argument("--ttft", type=float, default=0.02)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--spec", action="store_true", help="speculative counters: one step per chunk")
    p.add_argument("--no-metrics", dest="metrics", action="store_false")
    p.add_argument("--server-info-accept", type=float, default=2.5)
    p.add_argument("--eos-at", type=int, default=0, help="stop after N tokens unless ignore_eos")
    p.add_argument("--fail-every", type=int, default=0, help="every Nth streamed POST answers 500")
    p.add_argument("--no-continuous-usage", action="store_true")
    p.add_argument("--random-stop", type=float, default=0.0, help="early stops: length in [F x max, max]")
    p.add_argument("--random-chunk", type=int, default=0, help="1..M tokens a chunk, at --rate")
    p.add_argument("--chunk-pattern", default="", help='"k:ms,...": k tokens, ms after the previous chunk')
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--context-len", type=int, default=0,
                   help="refuse (HTTP 400, as SGLang) a prompt of at least this many words; 0 = no limit")
    p.add_argument("--count-on-finish", action="store_true",
                   help="generation_tokens_total grows when a request ends (SGLang), not per chunk")
    # a start-up first
    p.add_argument("--log", help="simulate a start-up, written to this log, before serving")
    p.add_argument("--port-file")
    p.add_argument("--pidfile")
    p.add_argument("--events")
    p.add_argument("--step", type=float, default=0.2, help="seconds between start-up phases")
    p.add_argument("--warmup", type=float, default=0.3, help="seconds /health answers 503 after listening")
    p.add_argument("--crash", default="none",
                   choices=("none", "oom", "oom_kv", "warmup_error", "exit3", "bad_argument", "silent_exit2",
                            "ports_held"))
    p.add_argument("--crash-at", default="load", choices=("ports", "load", "kv", "graph", "warmup"))
    p.add_argument("--hold", help="before turning ready (or crashing), wait until this file exists")
    p.add_argument("--hang-health", action="store_true", help="/health never answers")
    args = p.parse_args(argv)
    if args.log and args.flavor != "sglang":
        p.error("--log writes SGLang's start-up only; for vLLM's, start the simulator (sim/bin/vllm serve)")
    if args.model is None:
        args.model = STARTUP_MODEL if args.log else SERVING_MODEL
    return args


def expected_tok_s(concurrency, n, rate, ttft, k):
    """Ideal closed-loop throughput of the streaming server for n-token outputs."""
    latency = ttft + (math.ceil(n / float(k)) - 1) * k / rate
    return concurrency * n / latency


def main(argv=None):
    args = parse(argv)
    if args.log:
        Startup(args).main()
    else:
        asyncio.run(serve_now(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
