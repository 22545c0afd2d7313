# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A small real OpenAI-compatible streaming server with a KNOWN rate (stdlib, loopback).

Variable workloads: --random-stop F ends each request at a length drawn uniformly
in [max(1, F x max_tokens), max_tokens] whatever ignore_eos says (EOS-like early
stops); --random-chunk M sends 1..M tokens a chunk (a speculative server);
--chunk-pattern "k:ms,..." cycles chunks of k tokens sent ms after the previous
one (known per-token gaps for ITL tests). Seeded by --seed and the POST number.

Otherwise every request streams its tokens on an absolute schedule: chunk j (of K tokens)
leaves at start + ttft + j * K / rate, so one stream runs at `rate` tok/s and
the ideal throughput of c streams in closed loop is known exactly:
c * n / (ttft + (ceil(n/K) - 1) * K / rate) for n output tokens.

    python _bench_server.py --port 0 --rate 50 --ttft 0.05 --tokens-per-chunk 3 \
        --flavor sglang --spec --fail-every 5

prints `READY <port>` once listening. SIGTERM/SIGINT stop it.
Endpoints: GET /v1/models /health /metrics /server_info /stats[?reset=1] (the
server's own tok/s since the last reset: tokens / (first request in - last byte out));
GET /window?t0=T0&t1=T1: tokens the server wrote with time.perf_counter() in [T0, T1]
(CLOCK_MONOTONIC, the client's clock too on Linux);
POST /v1/completions /v1/chat/completions (stream or not).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import math
import random
import signal
import sys
import time

COUNTER_START = 1000000.0  # counters start far from zero: a reader must take deltas


class State(object):
    def __init__(self, args):
        self.args = args
        self.posts = 0
        self.requests = 0
        self.tokens = COUNTER_START          # generation tokens
        self.steps = COUNTER_START           # sglang verify calls / vllm drafts
        self.accepted = COUNTER_START * 0.5  # vllm accepted draft tokens (lifetime rate 1.5)
        self.writes = []                     # (perf_counter, tokens) of every content chunk written
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


def _sse(obj):
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunked(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def _json_response(writer, status, obj, reason="OK"):
    body = json.dumps(obj).encode()
    writer.write(
        b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (status, reason.encode(), len(body), body)
    )


def _text_response(writer, text):
    body = text.encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


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
        st.writes.append((time.perf_counter(), kk))
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


async def handle(reader, writer, st):
    a = st.args
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
            if method == "GET" and path == "/v1/models":
                owner = a.flavor if a.flavor != "none" else "someone"
                _json_response(writer, 200, {"object": "list",
                                             "data": [{"id": a.model, "object": "model", "owned_by": owner}]})
            elif method == "GET" and path == "/health":
                _json_response(writer, 200, {})
            elif method == "GET" and path == "/metrics" and a.flavor in ("sglang", "vllm") and a.metrics:
                _text_response(writer, metrics_text(st))
            elif method == "GET" and path == "/server_info" and a.flavor == "sglang":
                _json_response(writer, 200, {
                    "tp_size": 1,
                    "speculative_algorithm": "EAGLE3" if a.spec else None,
                    "internal_states": [{"avg_spec_accept_length": a.server_info_accept}],
                })
            elif method == "GET" and path.startswith("/window?"):
                q = dict(kv.split("=", 1) for kv in path.split("?", 1)[1].split("&"))
                _json_response(writer, 200, {"tokens": st.tokens_between(float(q["t0"]), float(q["t1"]))})
            elif method == "GET" and path.startswith("/stats"):
                w = dict(st.window)
                span = (w["last_write"] - w["first_recv"]) if w["requests"] else None
                w["tok_s"] = w["tokens"] / span if span else None
                _json_response(writer, 200, {"posts": st.posts, "requests": st.requests, "window": w,
                                             "max_posts_per_connection": st.max_posts_per_connection})
                if path.endswith("reset=1"):
                    st.reset()
            elif method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
                st.posts += 1
                posts_here += 1
                st.max_posts_per_connection = max(st.max_posts_per_connection, posts_here)
                if a.fail_every and st.posts % a.fail_every == 0:
                    _json_response(writer, 500, {"error": {"message": "injected failure %d" % st.posts}},
                                   "Internal Server Error")
                else:
                    st.requests += 1
                    req = json.loads(body)
                    await stream(writer, st, req, path.endswith("chat/completions"))
            else:
                _json_response(writer, 404, {"detail": "Not Found"}, "Not Found")
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main_async(args):
    st = State(args)
    server = await asyncio.start_server(lambda r, w: handle(r, w, st), args.host, args.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write("READY %d\n" % port)
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", choices=["127.0.0.1"])  # loopback only
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--model", default="test-model")
    p.add_argument("--flavor", default="sglang", choices=["sglang", "vllm", "none"])
    p.add_argument("--rate", type=float, default=50.0, help="tokens/s of one stream; 0 = no delay")
    p.add_argument("--ttft", type=float, default=0.02)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--spec", action="store_true", help="speculative counters: one step per chunk")
    p.add_argument("--no-metrics", dest="metrics", action="store_false")
    p.add_argument("--server-info-accept", type=float, default=2.5)
    p.add_argument("--eos-at", type=int, default=0, help="stop after N tokens unless ignore_eos")
    p.add_argument("--fail-every", type=int, default=0, help="every Nth POST answers 500")
    p.add_argument("--no-continuous-usage", action="store_true")
    p.add_argument("--random-stop", type=float, default=0.0, help="early stops: length in [F x max, max]")
    p.add_argument("--random-chunk", type=int, default=0, help="1..M tokens a chunk, at --rate")
    p.add_argument("--chunk-pattern", default="", help='"k:ms,...": k tokens, ms after the previous chunk')
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count-on-finish", action="store_true",
                   help="generation_tokens_total grows when a request ends (SGLang), not per chunk")
    return p.parse_args(argv)


def expected_tok_s(concurrency, n, rate, ttft, k):
    """Ideal closed-loop throughput of this server for n-token outputs."""
    latency = ttft + (math.ceil(n / float(k)) - 1) * k / rate
    return concurrency * n / latency


if __name__ == "__main__":
    asyncio.run(main_async(parse(sys.argv[1:])))
