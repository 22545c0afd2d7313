# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The streaming HTTP/1.1 parser and the request Record, fed bytes in every split.

Random mutations of real SGLang and vLLM stream events: a per-request error, never an exception.

The seed streams are the shapes the simulators send, themselves read from the wheels:
SGLang's openai_chunk / openai_usage_chunk (sim/pypath/sglang/_sim/api.py, after
srt/entrypoints/openai/serving_completions.py and serving_chat.py) and vLLM's _stream
(sim/pypath/vllm/_sim/http_api.py, after entrypoints/openai/serving_completion.py and
serving_chat.py), with continuous usage on every chunk. Derandomized: every run tries the same
cases, so a failure reproduces and CI never flakes on a new draw.
"""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import stats
from ansible_collections.gpufleet.serving.plugins.module_utils._bench import stream as bh
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Record, request_body
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import StreamProtocol


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


def _usage(done):
    return {"prompt_tokens": 4, "total_tokens": 4 + done, "completion_tokens": done, "prompt_tokens_details": None}


def _sglang(kind):
    out = []
    for i, text in enumerate([" a", " b c", " d"]):
        if kind == "chat":
            delta = {"role": "assistant", "content": text} if not i else {"content": text}
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": "length" if i == 2 else None,
                      "matched_stop": None}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length" if i == 2 else None,
                      "matched_stop": None}
        out.append({"id": "r", "object": "chat.completion.chunk" if kind == "chat" else "text_completion",
                    "created": 1, "model": "m", "choices": [choice], "usage": _usage([1, 3, 4][i])})
    out.append({"id": "r", "object": "text_completion", "created": 1, "model": "m", "choices": [], "usage": _usage(4)})
    return out


def _vllm(kind):
    obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
    out = []
    if kind == "chat":
        out.append({"id": "r", "object": obj, "created": 1, "model": "m", "usage": _usage(0), "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]})
    for i, text in enumerate([" a", " b", " c"]):
        if kind == "chat":
            choice = {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": None, "stop_reason": None}
        if i == 2:
            choice.update(finish_reason="length", stop_reason=None)
        out.append({"id": "r", "object": obj, "created": 1, "model": "m", "choices": [choice], "usage": _usage(i + 1)})
    out.append({"id": "r", "object": obj, "created": 1, "model": "m", "choices": [], "usage": _usage(3)})
    return out


SEEDS = [_sglang("chat"), _sglang("completion"), _vllm("chat"), _vllm("completion")]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10 ** 15, max_value=10 ** 15)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


def _paths(obj, prefix=()):
    """Every (path) to a value inside obj, dict keys and list indices."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            out += _paths(value, prefix + (i,))
    return out


def _set(obj, path, value, delete=False):
    for step in path[:-1]:
        obj = obj[step]
    if delete and isinstance(obj, dict):
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


TYPED = {"text": str, "content": str, "reasoning_content": str, "finish_reason": str,
         "completion_tokens": int, "prompt_tokens": int, "usage": dict}


def _wrong_type(path, value):
    """True when the mutation put a value of the wrong type where the parser must refuse it."""
    key = path[-1]
    if path == ("choices",):
        return not isinstance(value, list) or (value and not isinstance(value[0], dict))
    if path == ("choices", 0):
        return not isinstance(value, dict)
    if path == ("choices", 0, "delta"):
        return value is not None and not isinstance(value, dict)
    if path[0] == "choices" and key in ("content", "reasoning_content") and path[-2] == "delta":
        return value is not None and not isinstance(value, str)
    if path[:1] == ("choices",) and len(path) == 3 and key in ("text", "finish_reason"):
        return value is not None and not isinstance(value, str)
    if path[:1] == ("usage",) and len(path) == 2 and key in ("completion_tokens", "prompt_tokens"):
        return value is not None and (not isinstance(value, int) or isinstance(value, bool))
    return False


def _finish(rec):
    """As run_request ends a request."""
    if rec.status == 200 and rec.error is None and not rec.chunk_times:
        rec.error = "no output: the stream carried no content"
    return rec


@settings(max_examples=250, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(range(len(SEEDS))), data=st.data())
def test_mutated_events_fail_their_request_only(seed, data):
    events = copy.deepcopy(SEEDS[seed])
    index = data.draw(st.integers(0, len(events) - 1))
    path = data.draw(st.sampled_from(_paths(events[index])))
    delete = data.draw(st.booleans())
    value = None if delete else data.draw(JSON)
    _set(events[index], path, value, delete)
    payloads = [json.dumps(e).encode() for e in events]
    if data.draw(st.booleans()):  # and sometimes the bytes themselves: cut, or a byte changed
        raw = payloads[index]
        at = data.draw(st.integers(0, len(raw)))
        payloads[index] = raw[:at] + (data.draw(st.binary(max_size=2)) if data.draw(st.booleans()) else b"")
    rec = Record()
    rec.start = 0.0
    rec.on_status(200, {}, 0.0)
    for i, payload in enumerate(payloads):
        rec.on_event(payload, 0.01 * (i + 1))
    rec.on_event(b"[DONE]", 1.0)
    rec.on_end(1.0)
    _finish(rec)
    assert rec.ok or isinstance(rec.error, str)
    if not delete and payloads[index] == json.dumps(events[index]).encode() and _wrong_type(path, value):
        assert not rec.ok and "malformed stream event" in rec.error, (path, value, rec.error)
    assert isinstance(rec.tokens, int) and rec.tokens >= 0
    # The level's figures never raise either, and never count the failed request's tokens.
    lv = stats.level_metrics(1, [rec], 0, 5)
    assert lv["completed"] + lv["failed"] == 1
    if not rec.ok:
        assert lv["output_tokens"] == 0 and lv["output_tok_s"] is None and lv["itl_ms"]["p50"] is None


class _Transport:
    def write(self, data):
        pass

    def close(self):
        pass

    def abort(self):
        pass


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(seed=st.sampled_from(range(len(SEEDS))), cut=st.integers(0, 2000), junk=st.binary(max_size=8),
       split=st.integers(1, 64))
def test_mutated_http_framing_ends_the_request_not_the_run(seed, cut, junk, split):
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in SEEDS[seed]) + b"data: [DONE]\n\n"
    raw = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
           + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    cut = min(cut, len(raw))
    raw = raw[:cut] + junk + raw[cut + len(junk):]

    async def go():
        proto = StreamProtocol()
        proto.connection_made(_Transport())
        rec = Record()
        rec.start = 0.0
        fut = proto.send(b"", rec)
        for i in range(0, len(raw), split):
            proto.data_received(raw[i:i + split])  # never raises: an error goes to the future
        proto.connection_lost(None)
        await asyncio.wait_for(fut, 1)

    try:
        asyncio.run(go())
    except (ValueError, ConnectionError) as exc:  # what run_request records as the request's error
        assert str(exc)
