# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Malformed stream events fail their request with a message naming the key; never the run."""

from __future__ import annotations

import asyncio
import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Record, run_request
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint

GOOD = {"choices": [{"index": 0, "text": " a", "finish_reason": None}], "usage": {"completion_tokens": 1}}


def feed(*events):
    rec = Record()
    rec.start = 0.0
    rec.on_status(200, {}, 0.0)
    for i, ev in enumerate(events):
        rec.on_event(ev if isinstance(ev, bytes) else json.dumps(ev).encode(), 0.1 * (i + 1))
    rec.on_event(b"[DONE]", 1.0)
    rec.on_end(1.0)
    return rec


@pytest.mark.parametrize("event, key", [
    ({"choices": None}, "choices"),
    ({"choices": "oops"}, "choices"),
    ({"choices": [None]}, "choices[0]"),
    ({"choices": ["text"]}, "choices[0]"),
    ({"choices": [{"delta": "hello"}]}, "delta"),
    ({"choices": [{"delta": {"content": 5}}]}, "delta.content"),
    ({"choices": [{"text": ["a"]}]}, "text"),
    ({"choices": [{"text": "a", "finish_reason": 3}]}, "finish_reason"),
    ({"choices": [{"text": "a"}], "usage": 7}, "usage"),
    ({"choices": [{"text": "a"}], "usage": "many"}, "usage"),
    ({"choices": [{"text": "a"}], "usage": {"completion_tokens": "12"}}, "usage.completion_tokens"),
    ({"choices": [{"text": "a"}], "usage": {"completion_tokens": 2.5}}, "usage.completion_tokens"),
    ({"choices": [{"text": "a"}], "usage": {"completion_tokens": True}}, "usage.completion_tokens"),
    ({"choices": [{"text": "a"}], "usage": {"prompt_tokens": [1]}}, "usage.prompt_tokens"),
    (17, "not a JSON object"),
    (b"[" * 100000, "unparsable"),
    (b"\xff\xfe", "unparsable"),
    (b'{"choices": [{"text": "a"}], "usage": {"completion_tokens": NaN}}', "usage.completion_tokens"),
])
def test_malformed_event_fails_the_request_naming_the_key(event, key):
    rec = feed(GOOD, event, GOOD)
    assert not rec.ok
    assert rec.error.startswith(("malformed stream event", "unparsable stream event")), rec.error
    assert key in rec.error


def test_well_formed_events_of_both_servers_pass():
    # SGLang (sim/pypath/sglang/_sim/api.py openai_chunk) and vLLM (sim/pypath/vllm/_sim/http_api.py
    # _stream): usage null on content chunks, a usage-only last chunk with choices [].
    rec = feed({"choices": [{"index": 0, "delta": {"role": "assistant", "content": " a"}, "logprobs": None,
                             "finish_reason": None, "matched_stop": None}], "usage": None},
               {"choices": [{"index": 0, "delta": {"content": " b"}, "logprobs": None, "finish_reason": "length"}]},
               {"choices": [], "usage": {"prompt_tokens": 3, "total_tokens": 5, "completion_tokens": 2,
                                         "prompt_tokens_details": None}})
    assert rec.ok and rec.tokens == 2 and rec.prompt_tokens == 3 and rec.finish_reason == "length"


# ---- framing: through run_request on a loopback socket --------------------------------------

def _serve_once(raw):
    """run_request against a loopback server that answers `raw` and closes: the Record."""
    async def go():
        async def answer(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(raw)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        try:
            port = server.sockets[0].getsockname()[1]
            endpoint = Endpoint("http://127.0.0.1:%d" % port)
            return await run_request([None], endpoint, endpoint.post_bytes("/v1/completions", b"{}"), 5.0)
        finally:
            server.close()
    return asyncio.run(go())


@pytest.mark.parametrize("head, says", [
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: -5\r\n\r\n", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n", "chunk size"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
    (b"HTTP/1.1 abc OK\r\n\r\n", "status line"),
])
def test_broken_framing_fails_the_request_naming_it(head, says):
    rec = _serve_once(head + b'data: {"choices": [{"text": " a"}]}\n\n' * 3)
    assert not rec.ok and says in (rec.error or ""), rec.error
