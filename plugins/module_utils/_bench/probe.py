# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A steady load through a router for the length of a rollout, and the router's workers meanwhile.

`clients` streaming clients send one request after the other through the router (llm_benchmark's
own client: client.run_request), and `sample(seconds since the start)` (the router's worker list:
_router/sampling.py; the router_probe module joins the two) is called every `sample_interval`
seconds. It runs until `stop_file` exists (the rollout has ended), then
`after_s` seconds more, so the report has a before, a during and an after. `ready_file` is
written once `before_s` seconds have passed and a request has ended: the rollout starts then.

The result is raw: per request its start, TTFT, TPOT, end and outcome (seconds from the probe's
start); per sample the healthy and listed worker URLs. plugin_utils/_report/rollout_probe.py turns
it into the report. A request is `ok` when its stream ended with `data: [DONE]`, `broken` when it
had started streaming and did not, `failed` otherwise (refused, an error status, no answer).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import run_request
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import Endpoint
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.verdict import completed

COMPLETIONS = "/v1/completions"


def request_body(model: str, input_len: int, output_len: int, seed: int) -> bytes:
    """A streaming completion of a text prompt of about INPUT_LEN words (sglang-router 0.3.2 takes a
    prompt as a string only, not token ids), OUTPUT_LEN tokens with ignore_eos, usage in every chunk."""
    words = " ".join("word%d" % ((seed * 7 + i) % 97) for i in range(max(input_len - 1, 1)))
    return json.dumps({"model": model, "prompt": "%d %s" % (seed, words), "max_tokens": output_len, "temperature": 0.0,
                       "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True, "continuous_usage_stats": True}}).encode("utf-8")


def outcome(rec: Any) -> str:
    """ok, broken (a stream cut after it started) or failed."""
    if completed(rec) and rec.done:
        return "ok"
    return "broken" if rec.status == 200 and rec.chunk_times else "failed"


def request_row(rec: Any, t0: float) -> dict:
    """One request's figures, its times in seconds from T0 (perf_counter)."""
    tokens = len(rec.chunk_times) if rec.completion_tokens is None else rec.completion_tokens
    ttft = rec.first - rec.start if rec.first is not None else None
    tpot = (rec.chunk_times[-1] - rec.first) / (tokens - 1) if rec.first is not None and tokens > 1 else None
    return {"start": round(rec.start - t0, 4), "end": round((rec.end or rec.start) - t0, 4),
            "ttft": None if ttft is None else round(ttft, 5), "tpot": None if tpot is None else round(tpot, 6),
            "tokens": tokens, "outcome": outcome(rec), "status": rec.status,
            "error": None if rec.error is None else str(rec.error)[:200]}


class Probe:
    """The load and the sampler, on one asyncio loop; run() blocks until the end."""

    def __init__(self, sample: Callable[[float], dict], router_url: str, stop_file: str, ready_file: str | None = None,
                 clients: int = 8, input_len: int = 32, output_len: int = 200, model: str = "default",
                 api_key: str | None = None, request_timeout: float = 120.0, sample_interval: float = 0.5,
                 before_s: float = 5.0, after_s: float = 5.0, max_s: float = 3600.0,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.sample, self.clock, self.router_url = sample, clock, router_url
        self.endpoint = Endpoint(router_url, api_key=api_key)
        self.stop_file, self.ready_file = stop_file, ready_file
        self.clients, self.input_len, self.output_len, self.model = clients, input_len, output_len, model
        self.request_timeout, self.sample_interval = request_timeout, sample_interval
        self.before_s, self.after_s, self.max_s = before_s, after_s, max_s
        self.t0 = clock()
        self.requests: list = []
        self.samples: list = []
        self.stopping = False
        self.stop_at: float | None = None
        self.seed = 0

    async def _client(self) -> None:
        state = [None]
        while not self.stopping:
            self.seed += 1
            body = request_body(self.model, self.input_len, self.output_len, self.seed)
            rec = await run_request(state, self.endpoint, self.endpoint.post_bytes(COMPLETIONS, body),
                                    self.request_timeout)
            self.requests.append(request_row(rec, self.t0))
        if state[0] is not None:
            state[0].abort()

    async def _sampler(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.stopping:
            self.samples.append(await loop.run_in_executor(None, self.sample, self.clock() - self.t0))
            await asyncio.sleep(self.sample_interval)

    def _ready(self, elapsed: float) -> bool:
        return elapsed >= self.before_s and bool(self.requests) and bool(self.samples)

    async def _watch(self) -> None:
        ready = self.ready_file is None
        while True:
            elapsed = self.clock() - self.t0
            if not ready and self._ready(elapsed):
                with open(self.ready_file, "w", encoding="utf-8") as handle:
                    handle.write("%.3f\n" % elapsed)
                ready = True
            if self.stop_at is None and (os.path.exists(self.stop_file) or elapsed >= self.max_s):
                self.stop_at = elapsed
            if self.stop_at is not None and elapsed >= self.stop_at + self.after_s:
                self.stopping = True
                return
            await asyncio.sleep(0.1)

    async def _main(self) -> None:
        await asyncio.gather(self._watch(), self._sampler(), *(self._client() for unused in range(self.clients)))

    def run(self) -> dict:
        asyncio.run(self._main())
        return {"router_url": self.router_url,
                "clients": self.clients, "output_len": self.output_len, "stopped_s": self.stop_at,
                "duration_s": round(self.clock() - self.t0, 3), "requests": sorted(self.requests, key=lambda r: r["start"]),
                "samples": self.samples}


def probe_task(params: dict, sample: Callable[[float], dict]) -> dict:
    """router_probe: the probe with the module's options until the stop file."""
    probe = Probe(sample, params["router_url"], params["stop_file"], params["ready_file"], params["clients"],
                  params["input_len"], params["output_len"], params["model"], params["client_api_key"],
                  params["stream_timeout"], params["sample_interval"], params["before_s"], params["after_s"],
                  params["max_s"])
    return dict(probe.run(), changed=False)
