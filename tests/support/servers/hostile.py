#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in server that misbehaves the way real ones and proxies do (stdlib only, loopback only).

Streamed POSTs to /v1/completions and /v1/chat/completions follow --script, a comma list
of behaviours taken in turn (POST n gets entry n modulo its length):

  ok             max_tokens tokens, one a chunk, running usage on every chunk, a usage-only
                 last chunk and [DONE] (the shapes of sim/pypath/vllm/_sim/http_api.py)
  cut            5 tokens, then the connection is closed mid-stream (a proxy that cuts it)
  endless        tokens until the client gives up
  http500        HTTP 500 with a JSON error body (a server failing under load)
  empty          200, the role-only chat chunk and [DONE], no content
  bad:NAME       2 good chunks, then one malformed event (MALFORMED), then the rest
  lie:KIND       every chunk right, the usage wrong: huge (10^12), negative, decreasing

GET /v1/models answers; everything else is 404. Prints READY <port>; SIGTERM stops it.

    python hostile.py --port 0 --script ok,cut --rate 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys

LOOPBACK = "127.0.0.1"
MODEL = "hostile-model"

MALFORMED = {
    "choices_null": {"choices": None},
    "choices_str": {"choices": "not a list"},
    "delta_str": {"choices": [{"index": 0, "delta": "hello", "finish_reason": None}]},
    "usage_num": {"choices": [{"index": 0, "text": " x", "finish_reason": None}], "usage": 7},
    "tokens_str": {"choices": [{"index": 0, "text": " x", "finish_reason": None}],
                   "usage": {"prompt_tokens": 4, "completion_tokens": "3", "total_tokens": 7}},
}


def _sse(obj):
    data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def _usage(done):
    return {"prompt_tokens": 4, "completion_tokens": done, "total_tokens": 4 + done}


def _told(kind, i, n):
    """The usage count a lying server reports at chunk i (1-based) of n."""
    if kind == "huge":
        return 10 ** 12 if i == n else i
    if kind == "negative":
        return -i
    if kind == "decreasing":
        return n - i + 1
    return i


async def _stream(writer, args, behaviour, body, chat):
    n = int(body.get("max_tokens") or 16)
    kind, unused, arg = behaviour.partition(":")
    obj = "chat.completion.chunk" if chat else "text_completion"
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    if chat:
        role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
        writer.write(_sse({"object": obj, "choices": [role], "usage": _usage(0)}))
    if kind == "empty":
        writer.write(_sse(b"[DONE]") + b"0\r\n\r\n")
        return
    i = 0
    while kind == "endless" or i < n:
        i += 1
        if kind == "cut" and i > 5:
            await writer.drain()
            writer.transport.abort()  # no terminating chunk: the stream just ends
            return
        if kind == "bad" and i == 3:
            writer.write(_sse(MALFORMED[arg]))
        text = " w%d" % i
        choice = {"index": 0, "finish_reason": "length" if i == n and kind != "endless" else None}
        choice.update({"delta": {"content": text}} if chat else {"text": text})
        writer.write(_sse({"object": obj, "choices": [choice], "usage": _usage(_told(arg if kind == "lie" else "", i, n))}))
        await writer.drain()
        if args.rate:
            await asyncio.sleep(1.0 / args.rate)
    writer.write(_sse({"object": obj, "choices": [], "usage": _usage(_told(arg if kind == "lie" else "", n, n))}))
    writer.write(_sse(b"[DONE]") + b"0\r\n\r\n")


async def handle(reader, writer, args, posts):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = 0
            for line in lines[1:]:
                key, unused, value = line.partition(":")
                if key.strip().lower() == "content-length":
                    length = int(value)
            body = json.loads(await reader.readexactly(length) or b"{}")
            if method == "GET" and path == "/v1/models":
                data = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(data), data))
            elif method == "POST" and path in ("/v1/completions", "/v1/chat/completions") and body.get("stream"):
                behaviour = args.script[posts[0] % len(args.script)]
                posts[0] += 1
                if behaviour == "http500":
                    data = json.dumps({"error": {"message": "overloaded, request %d" % posts[0]}}).encode()
                    writer.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
                else:
                    await _stream(writer, args, behaviour, body, path.endswith("chat/completions"))
                    if writer.transport.is_closing():
                        return
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(args):
    posts = [0]
    server = await asyncio.start_server(lambda r, w: handle(r, w, args, posts), LOOPBACK, args.port)
    sys.stdout.write("READY %d\n" % server.sockets[0].getsockname()[1])
    sys.stdout.flush()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--script", default="ok", type=lambda text: text.split(","))
    p.add_argument("--rate", type=float, default=0.0, help="tokens/s of one stream; 0 = no delay")
    args = p.parse_args(argv)
    for entry in args.script:
        kind, unused, arg = entry.partition(":")
        if kind not in ("ok", "cut", "endless", "http500", "empty", "bad", "lie") or (kind == "bad" and arg not in MALFORMED):
            p.error("unknown behaviour %r" % entry)
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
