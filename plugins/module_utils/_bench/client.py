# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One streaming OpenAI-compatible request: its body, and what it measured.

Token counts are the server's own (`usage.completion_tokens`), never a
re-tokenization. With `continuous_usage_stats` (SGLang and vLLM both honour
it) every chunk carries the running count, so a chunk's token count is the
difference from the previous content chunk's count.
"""

from __future__ import annotations

import asyncio
import json
import random
import time

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import verdict
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import (
    Endpoint,
    Handler,
    MalformedResponse,
    open_connection,
    read_event,
)

# Token ids for random completions prompts: below every common tokenizer's
# special-token range (Llama 3, Qwen, Kimi, DeepSeek put them at the top) and
# above the byte/control ids some tokenizers keep at the bottom.
_TOKEN_LOW, _TOKEN_HIGH = 1000, 30000
_WORDS = (
    "time year people way day man thing woman life child world school state family "
    "student group country problem hand part place case week company system program "
    "question work government number night point home water room mother area money "
    "story fact month lot right study book eye job word business issue side kind head "
    "house service friend father power hour game line end member law car city name"
).split()


def request_body(api: str, model: str, input_len: int, output_len: int, seed: int, temperature: float, ignore_eos: bool = True) -> bytes:
    """JSON bytes of one streaming request with a prompt unique to `seed`.

    completions: a list of `input_len` random token ids (exact length, no
    tokenizer needed). chat: `input_len` random common words (about one token
    each; the server's usage.prompt_tokens is reported as measured).
    """
    rng = random.Random(seed)
    body = {
        "model": model,
        "max_tokens": output_len,
        "temperature": temperature,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    if ignore_eos:
        body["ignore_eos"] = True
    if api == "chat":
        words = " ".join(rng.choice(_WORDS) for unused in range(max(input_len - 1, 1)))
        body["messages"] = [{"role": "user", "content": "%d %s" % (seed, words)}]
    else:
        body["prompt"] = [rng.randrange(_TOKEN_LOW, _TOKEN_HIGH) for unused in range(input_len)]
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


class Record(Handler):
    """What one request measured. Times are perf_counter seconds."""

    __slots__ = (
        "start", "first", "end", "status", "error", "done", "finish_reason",
        "completion_tokens", "prompt_tokens", "chunk_times", "chunk_cum", "_cum", "_err", "max_tokens",
    )

    def __init__(self) -> None:
        self.start = None
        self.first = None        # arrival of the first non-empty content chunk
        self.end = None
        self.status = None
        self.error = None
        self.done = False        # saw data: [DONE]
        self.finish_reason = None
        self.completion_tokens = None
        self.prompt_tokens = None
        self.chunk_times = []    # arrival of every non-empty content chunk
        self.chunk_cum = []      # running completion_tokens in that chunk, or None
        self._cum = None
        self._err = b""
        self.max_tokens = None   # what the request asked for (bounds a believable usage count)

    # Handler ---------------------------------------------------------------
    def on_status(self, status: int, headers: dict, now: float) -> None:
        self.status = status

    def on_error_body(self, data: bytes) -> None:
        self._err += data

    def on_event(self, data: bytes, now: float) -> None:
        if data == b"[DONE]":
            self.done = True
            self.end = now
            return
        if self.error is not None:
            return  # the request has failed already; its first error is the one to show
        try:
            text, finish, completion, prompt, has_usage, error = read_event(data)
        except MalformedResponse as exc:
            self.error = str(exc)
            return
        if error:
            self.error = error
            return
        if completion is not None:
            self._cum = self.completion_tokens = completion
        if prompt is not None:
            self.prompt_tokens = prompt
        if text:
            if self.first is None:
                self.first = now
            self.chunk_times.append(now)
            self.chunk_cum.append(self._cum if has_usage else None)
        if finish:
            self.finish_reason = finish

    def on_end(self, now: float) -> None:
        if self.end is None or not self.done:
            self.end = now
        if self.status != 200 and self.error is None:
            body = self._err.decode("utf-8", "replace").strip().replace("\n", " ")
            self.error = "HTTP %s: %s" % (self.status, body[:300])

    # results ---------------------------------------------------------------
    @property
    def ok(self) -> bool:
        return verdict.completed(self)

    @property
    def tokens(self) -> int:
        """Output tokens: the server's usage count, or the content count (verdict.output_tokens)."""
        return verdict.output_tokens(self)

    @property
    def usage_reported(self) -> bool:
        return self.completion_tokens is not None

    @property
    def usage_suspect(self) -> str | None:
        """Why the server's usage count was not believed (verdict.usage_problem), or None."""
        return verdict.usage_problem(self)

    def arrivals(self) -> list:
        """[(time, tokens)] of every token this request received, whatever its outcome.

        Content chunks carry their usage delta (or the even spread); tokens the
        final count holds beyond the last content chunk (an empty last chunk, a
        usage-only chunk) arrive at the end.
        """
        if not self.chunk_times:
            return [(self.end, self.completion_tokens)] if self.completion_tokens and self.end else []
        ks, unused = self.chunk_tokens()
        out = list(zip(self.chunk_times, ks))
        rest = self.tokens - sum(ks)
        if rest > 1e-9 and self.end is not None:
            out.append((self.end, rest))
        return out

    def chunk_tokens(self) -> tuple:
        """(tokens per content chunk, 'usage'|'average').

        'usage': differences of the running usage count, when every content
        chunk carried one and each difference is positive (a speculative server
        sends several tokens per chunk). Otherwise 'average': the request's
        tokens spread evenly over its content chunks.
        """
        cums = self.chunk_cum
        if cums and all(c is not None for c in cums) and not self.usage_suspect:
            prev = 0
            out = []
            for c in cums:
                if c - prev <= 0:
                    break
                out.append(c - prev)
                prev = c
            else:
                return out, "usage"
        n = len(self.chunk_times)
        return ([float(self.tokens) / n] * n if n else []), "average"


async def run_request(state: list, endpoint: Endpoint, request_bytes: bytes, timeout: float, per_request: bool = False) -> Record:
    """Send one request on the worker's connection (reopened when needed).

    state: a one-item list holding the worker's StreamProtocol (or None), so the
    connection persists across the worker's requests.
    per_request: open a fresh connection for this request and start the clock
    before connecting (sglang.bench_serving's cold-connection TTFT); the
    request bytes then carry `Connection: close`.
    """
    rec = Record()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    rec.start = time.perf_counter()
    proto = state[0]
    try:
        if per_request or proto is None or not proto.reusable:
            if proto is not None:
                proto.abort()
            proto = state[0] = await open_connection(endpoint, timeout)
            if not per_request:
                rec.start = time.perf_counter()  # connection set-up is not the server's latency
        fut = proto.send(request_bytes, rec)
        # One timer per request (not per read) keeps the per-chunk cost nil.
        timer = loop.call_at(deadline, proto.abort)
        try:
            await fut
        finally:
            timer.cancel()
        if rec.status == 200 and rec.error is None and not rec.chunk_times:
            rec.error = "no output: the stream carried no content"
    except Exception as exc:  # noqa: BLE001 - whatever the response did, it fails this request only
        if proto is not None:
            proto.abort()
        state[0] = None
        if loop.time() >= deadline:
            rec.error = "timeout after %gs" % timeout
        else:
            rec.error = "%s: %s" % (type(exc).__name__, exc)
        rec.end = time.perf_counter()
    return rec
