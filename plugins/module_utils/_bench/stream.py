# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A lean asyncio HTTP/1.1 client connection for streaming (SSE) load.

One persistent keep-alive connection per load worker. Parsing happens in
data_received, so each chunk is timestamped when the event loop first sees
its bytes, with no coroutine switch per chunk: that keeps one client core
far above the server's rate (see bench/client_ceiling.py).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from ansible_collections.gpufleet.serving.plugins.module_utils._http import request_headers

_MAX_HEADER = 64 * 1024
_MAX_ERROR_BODY = 2048
USER_AGENT = "gpufleet.serving.llm_benchmark"


class Endpoint:
    """Where the load's requests go: parsed once from base_url."""

    def __init__(self, base_url: str, api_key: str | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("base_url must be http(s)://host[:port][/prefix], got %r" % base_url)
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        # A base_url ending in /v1 is common; endpoint paths below add /v1 themselves.
        if self.prefix.endswith("/v1"):
            self.prefix = self.prefix[:-3]
        self.ssl = ssl_context if self.scheme == "https" else None
        hostport = self.host if parts.port is None else "%s:%d" % (self.host, self.port)
        headers = dict({"Host": hostport}, **request_headers(api_key, USER_AGENT))
        self.base_headers = "".join("%s: %s\r\n" % item for item in headers.items())

    def post_bytes(self, path: str, body: bytes, close: bool = False) -> bytes:
        """The complete request bytes for a streaming POST of a JSON body."""
        head = (
            "POST %s%s HTTP/1.1\r\n%sContent-Type: application/json\r\n"
            "Accept: text/event-stream\r\n%sContent-Length: %d\r\n\r\n"
            % (self.prefix, path, self.base_headers, "Connection: close\r\n" if close else "", len(body))
        )
        return head.encode("latin-1") + body


class MalformedResponse(ValueError):
    """A response that breaks the protocol: it fails its request, never the run."""


def _kind(value):
    if value is None:
        return "null"
    name = type(value).__name__
    return "%s %s (%s)" % ("an" if name[0] in "aeiou" else "a", name, repr(value)[:40])


def _bad(data, key, value, want):
    raise MalformedResponse("malformed stream event: %s is %s, not %s: %r" % (key, _kind(value), want, data[:120]))


_NO_CHOICES = []


def read_event(data: bytes) -> tuple:
    """One OpenAI-compatible stream chunk, checked key by key:
    (text, finish_reason, completion_tokens, prompt_tokens, has_usage, error).

    The shapes SGLang and vLLM send (vllm/entrypoints/openai/protocol.py
    CompletionStreamResponse, ChatCompletionStreamResponse; SGLang's
    srt/entrypoints/openai/protocol.py): an object; `choices` a list of objects
    (empty in the usage-only last chunk); `delta` an object (chat) with string or
    null `content` / `reasoning_content`; `text` a string (completions); `usage`
    null or an object of integer counts; `error` a string or an object. Anything
    else raises MalformedResponse naming the key. Exact type checks (`type(x) is
    int`) keep it cheap per chunk and refuse a bool or float count.
    """
    # pylint: disable=unidiomatic-typecheck
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise MalformedResponse("unparsable stream event (%s): %r" % (type(exc).__name__, data[:120]))
    if type(obj) is not dict:
        raise MalformedResponse("malformed stream event: not a JSON object but %s" % _kind(obj))
    choices = obj.get("choices", _NO_CHOICES)
    if obj.get("error") and not choices:
        err = obj["error"]
        return None, None, None, None, False, "stream error: %s" % (
            err.get("message", err) if isinstance(err, dict) else err)
    completion = prompt = None
    usage = obj.get("usage")
    if usage is not None:
        if type(usage) is not dict:
            _bad(data, "usage", usage, "an object")
        completion = usage.get("completion_tokens")
        if completion is not None and type(completion) is not int:
            _bad(data, "usage.completion_tokens", completion, "an integer")
        prompt = usage.get("prompt_tokens")
        if prompt is not None and type(prompt) is not int:
            _bad(data, "usage.prompt_tokens", prompt, "an integer")
    if type(choices) is not list:
        _bad(data, "choices", choices, "a list")
    if not choices:
        return None, None, completion, prompt, bool(usage), None
    choice = choices[0]
    if type(choice) is not dict:
        _bad(data, "choices[0]", choice, "an object")
    delta = choice.get("delta")
    text = None
    if delta is not None:  # chat; a thinking model's reasoning text is output too
        if type(delta) is not dict:
            _bad(data, "delta", delta, "an object")
        for key in ("content", "reasoning_content", "reasoning"):
            value = delta.get(key)
            if value is not None and type(value) is not str:
                _bad(data, "delta." + key, value, "a string")
            text = text or value
    else:
        text = choice.get("text")
        if text is not None and type(text) is not str:
            _bad(data, "text", text, "a string")
    finish = choice.get("finish_reason")
    if finish is not None and type(finish) is not str:
        _bad(data, "finish_reason", finish, "a string")
    return text, finish, completion, prompt, bool(usage), None


class Handler:
    """What a response is fed to; the load client subclasses it."""

    def on_status(self, status: int, headers: dict, now: float) -> None:
        pass

    def on_event(self, data: bytes, now: float) -> None:
        """One SSE `data:` payload (bytes, stripped)."""

    def on_error_body(self, data: bytes) -> None:
        pass

    def on_end(self, now: float) -> None:
        pass


class StreamProtocol(asyncio.Protocol):
    """One connection; one request in flight at a time (HTTP/1.1 without pipelining)."""

    def __init__(self) -> None:
        self.transport = None
        self.closed = False
        self._reset(None, None)

    def _reset(self, handler, future):
        self.handler = handler
        self.future = future
        self.buf = b""
        self.state = "head"
        self.remaining = 0
        self.sse = False
        self.line = b""
        self.keep_alive = True
        self.status = None
        self.error_len = 0

    # asyncio callbacks -------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def connection_lost(self, exc: Any) -> None:
        self.closed = True
        if self.future is not None and not self.future.done():
            if self.state == "eof":  # body delimited by close: this is its end
                self._finish(time.perf_counter())
            else:
                self.future.set_exception(ConnectionError(str(exc) if exc else "connection closed by server"))

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self.future is None or self.future.done():
            return  # bytes after a finished response (should not happen); ignore
        try:
            self._feed(data, now)
        except Exception as exc:  # a malformed response fails this request only
            self.keep_alive = False
            if not self.future.done():
                self.future.set_exception(exc)

    # request -------------------------------------------------------------
    def send(self, request_bytes: bytes, handler: Any) -> Any:
        """Write a request; the returned future resolves when the response ends."""
        fut = asyncio.get_running_loop().create_future()
        self._reset(handler, fut)
        self.transport.write(request_bytes)
        return fut

    def abort(self) -> None:
        self.keep_alive = False
        if self.transport is not None:
            self.transport.abort()

    @property
    def reusable(self) -> bool:
        return not self.closed and self.keep_alive

    # parsing -------------------------------------------------------------
    def _feed(self, data, now):
        buf = self.buf + data if self.buf else data
        pos = 0
        n = len(buf)
        while pos < n:
            st = self.state
            if st == "head":
                end = buf.find(b"\r\n\r\n", pos)
                if end < 0:
                    if n - pos > _MAX_HEADER:
                        raise ValueError("response header too large")
                    break
                self._head(buf[pos:end].decode("latin-1"), now)
                pos = end + 4
            elif st == "size":
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    break
                size = _number(buf[pos:end].split(b";", 1)[0].strip() or b"0", 16, "chunk size")
                pos = end + 2
                if size == 0:
                    self.state = "trailer"
                else:
                    self.remaining = size
                    self.state = "chunk"
            elif st == "chunk":
                take = min(self.remaining, n - pos)
                self._body(buf[pos:pos + take], now)
                pos += take
                self.remaining -= take
                if self.remaining == 0:
                    self.state = "crlf"
            elif st == "crlf":
                if n - pos < 2:
                    break
                pos += 2
                self.state = "size"
            elif st == "trailer":
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    break
                line_empty = end == pos
                pos = end + 2
                if line_empty:
                    self.state = "done"
            elif st == "length":
                take = min(self.remaining, n - pos)
                self._body(buf[pos:pos + take], now)
                pos += take
                self.remaining -= take
                if self.remaining == 0:
                    self.state = "done"
            elif st == "eof":
                self._body(buf[pos:], now)
                pos = n
            if self.state == "done":
                self._finish(now)
                pos = n  # anything after the response end is ignored
                break
        self.buf = buf[pos:] if pos < n else b""

    def _head(self, text, now):
        lines = text.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError("not an HTTP response: %r" % lines[0][:80])
        self.status = _number(parts[1], 10, "status line %r:" % lines[0][:80])
        headers = {}
        for line in lines[1:]:
            key, unused, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        if parts[0] == "HTTP/1.0" or headers.get("connection", "").lower() == "close":
            self.keep_alive = False
        self.sse = self.status == 200 and "text/event-stream" in headers.get("content-type", "")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.state = "size"
        elif "content-length" in headers:
            self.remaining = _number(headers["content-length"], 10, "Content-Length")
            self.state = "length" if self.remaining else "done"
        else:
            self.keep_alive = False
            self.state = "eof"
        self.handler.on_status(self.status, headers, now)

    def _body(self, data, now):
        if not data:
            return
        if not self.sse:
            if self.error_len < _MAX_ERROR_BODY:
                self.handler.on_error_body(data[:_MAX_ERROR_BODY - self.error_len])
                self.error_len += len(data)
            return
        # SSE: dispatch every complete `data:` line at once (these servers send one-line events).
        text = self.line + data if self.line else data
        start = 0
        while True:
            nl = text.find(b"\n", start)
            if nl < 0:
                break
            line = text[start:nl]
            start = nl + 1
            if line.startswith(b"data:"):
                self.handler.on_event(line[5:].strip(), now)
        self.line = text[start:]

    def _finish(self, now):
        if self.line.startswith(b"data:"):  # a last event without its newline
            self.handler.on_event(self.line[5:].strip(), now)
            self.line = b""
        self.handler.on_end(now)
        if not self.keep_alive and self.transport is not None:
            self.transport.close()
        self.future.set_result(self.status)


def _number(text, base, what):
    """A non-negative integer of the framing, or MalformedResponse naming the field."""
    try:
        value = int(text, base)
    except ValueError:
        value = -1
    # int() takes signs, spaces and underscores that HTTP does not: a negative size would walk backwards.
    if value < 0 or not text or text[:1] in (b"-", b"+", "-", "+"):
        raise MalformedResponse("bad %s %r in the response" % (what, text[:40]))
    return value


async def open_connection(endpoint: Endpoint, timeout: float) -> StreamProtocol:
    """A connected StreamProtocol, or an exception after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    unused, proto = await asyncio.wait_for(
        loop.create_connection(StreamProtocol, endpoint.host, endpoint.port, ssl=endpoint.ssl),
        timeout,
    )
    return proto
