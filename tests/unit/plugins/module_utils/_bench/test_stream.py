# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The streaming HTTP/1.1 parser and the request Record, fed bytes in every split."""

from __future__ import annotations

import asyncio
import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import stream as bh
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Record, request_body


class Transport:
    def __init__(self):
        self.written = b""
        self.closed = self.aborted = False

    def write(self, data):
        self.written += data

    def close(self):
        self.closed = True

    def abort(self):
        self.aborted = True


def sse(obj):
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chunked(*parts):
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


EVENTS = [
    sse({"choices": [{"index": 0, "text": " a b", "finish_reason": None}], "usage": {"completion_tokens": 2}}),
    sse({"choices": [{"index": 0, "text": " c", "finish_reason": "length"}], "usage": {"completion_tokens": 3}}),
    sse({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}),
    b"data: [DONE]\n\n",
]
CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" \
    + chunked(*EVENTS)
BODY = b"".join(EVENTS)
LENGTH = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY


def drive(raw, split, close_after=False):
    """Feed `raw` in pieces of `split` bytes; return (record, future result or exception, protocol)."""
    async def go():
        proto = bh.StreamProtocol()
        proto.connection_made(Transport())
        rec = Record()
        rec.start = 0.0
        fut = proto.send(b"GET / HTTP/1.1\r\n\r\n", rec)
        for i in range(0, len(raw), split):
            proto.data_received(raw[i:i + split])
        if close_after:
            proto.connection_lost(None)
        try:
            return rec, await asyncio.wait_for(fut, 1), proto
        except Exception as exc:  # returned for the assertion
            return rec, exc, proto
    return asyncio.run(go())


@pytest.mark.parametrize("raw", [CHUNKED, LENGTH], ids=["chunked", "content-length"])
@pytest.mark.parametrize("split", [1, 7, 64, 100000])
def test_stream_parsed_in_any_split(raw, split):
    rec, status, proto = drive(raw, split)
    assert status == 200
    assert rec.ok and rec.done
    assert rec.tokens == 3 and rec.prompt_tokens == 5
    assert rec.chunk_cum == [2, 3]
    assert rec.chunk_tokens() == ([2, 1], "usage")
    assert rec.finish_reason == "length"
    assert proto.reusable


def test_body_until_close():
    raw = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + BODY
    rec, status, proto = drive(raw, 10, close_after=True)
    assert status == 200 and rec.tokens == 3
    assert not proto.reusable


def test_error_status_keeps_a_sample_of_the_body():
    body = json.dumps({"error": {"message": "injected"}}).encode()
    raw = b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body), body)
    rec, status, unused = drive(raw, 5)
    assert status == 500 and not rec.ok
    assert rec.error.startswith("HTTP 500: ") and "injected" in rec.error


def test_connection_lost_midway_fails_the_request():
    rec, result, unused = drive(CHUNKED[:150], 50, close_after=True)
    assert isinstance(result, ConnectionError)


def test_garbage_is_an_error_not_a_hang():
    rec, result, proto = drive(b"SSH-2.0-OpenSSH\r\n\r\n", 100)
    assert isinstance(result, ValueError)
    assert not proto.reusable


def test_chat_reasoning_and_stream_error_events():
    rec = Record()
    rec.start = 0.0
    rec.on_status(200, {}, 0.0)
    rec.on_event(json.dumps({"choices": [{"delta": {"role": "assistant", "content": ""}}]}).encode(), 0.1)
    rec.on_event(json.dumps({"choices": [{"delta": {"reasoning_content": "hmm"}}]}).encode(), 0.2)
    assert rec.first == 0.2
    rec.on_event(json.dumps({"error": {"message": "out of memory"}}).encode(), 0.3)
    rec.on_end(0.4)
    assert not rec.ok and rec.error == "stream error: out of memory"


def test_target_parses_base_url_and_builds_requests():
    t = bh.Endpoint("http://10.0.0.5:30000/v1/", api_key="k")
    assert (t.host, t.port, t.prefix) == ("10.0.0.5", 30000, "")
    raw = t.post_bytes("/v1/completions", b"{}")
    assert raw.startswith(b"POST /v1/completions HTTP/1.1\r\nHost: 10.0.0.5:30000\r\n")
    assert b"Authorization: Bearer k\r\n" in raw and raw.endswith(b"Content-Length: 2\r\n\r\n{}")
    with pytest.raises(ValueError):
        bh.Endpoint("ftp://x")


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_request_body_is_streaming_fixed_length_and_unique(api):
    a = json.loads(request_body(api, "m", 16, 32, 1, 0.0))
    b = json.loads(request_body(api, "m", 16, 32, 2, 0.0))
    assert a["stream"] and a["ignore_eos"] and a["max_tokens"] == 32
    assert a["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    if api == "completions":
        assert len(a["prompt"]) == 16 and a["prompt"] != b["prompt"]
    else:
        assert a["messages"][0]["content"] != b["messages"][0]["content"]
        assert len(a["messages"][0]["content"].split()) == 16
