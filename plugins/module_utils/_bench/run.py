# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The llm_benchmark sweep: find the model and engine, run each level, summarise."""

from __future__ import annotations

import datetime
import json
import os
import random
import time
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.accept import (
    AcceptanceMeter,
    counter,
    detect_engine,
    read_server_info,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.bounds import value_problems
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.categories import by_category, with_pass
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import request_body
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.load import run_level
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.options import DEFAULT_LEVELS
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.records import RecordWriter, flatten, workload_jobs
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.repeats import combine
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stats import level_metrics, summary, window_bounds
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stream import USER_AGENT, Endpoint
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.sample import load_workload
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._files import open_owned, write_atomic
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient, server_root, ssl_context

PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def default_requests(level: int) -> int:
    """max(2 x level, 8), rounded up to whole waves of `level` so the level ends full."""
    n = max(2 * level, 8)
    return -(-n // level) * level


# The servers' own output-token and finished-request counters (Engine.generated_tokens,
# Engine.finished_requests), the first present counts.
GENERATION_COUNTERS = tuple(engine.generated_tokens for engine in _registry.engines())
REQUEST_COUNTERS = tuple(engine.finished_requests for engine in _registry.engines())


def _check(params):
    """The levels to run, once every given option's value is one llm_benchmark takes."""
    for _key, problem in value_problems(params):
        raise InvalidInput(problem)
    return params.get("levels") or DEFAULT_LEVELS


class NoTelemetry:
    """The sweep's telemetry when none is given: no GPU figures (see Sweep.telemetry)."""

    info = None

    def begin(self) -> None:
        pass

    def level(self, start: float | None, end: float | None, output_tokens: float) -> dict:
        return {}

    def close(self) -> None:
        pass


def run_benchmark(params: dict, telemetry: Any = None) -> dict:
    """The module's result (without `changed`) for the validated parameters.

    telemetry: a factory called with PARAMS that returns an object with begin() (before each
    timed pass), level(window start, window end, output tokens) -> the figures to add to the
    pass (after it) and close(), and `info` (the result's `telemetry`); llm_benchmark gives
    _gpu's, since _bench may not import _gpu (docs/design.md).
    """
    levels = _check(params)
    # The workload is read before the server is asked anything: a bad file fails at once.
    workload = _workload(params)
    api = _api(params, workload)
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    t0 = time.monotonic()
    server = _server(params)
    sweep = Sweep(params, workload, api, server, levels)
    sweep.telemetry = telemetry(params) if telemetry else NoTelemetry()
    try:
        out_levels = [sweep.level(index, level, rate) for index, (level, rate) in enumerate(sweep.plan)]
    finally:
        sweep.telemetry.close()
    result = _result(params, sweep, server, out_levels, started, t0)
    if sweep.telemetry.info is not None:
        result["telemetry"] = sweep.telemetry.info
    if not any(lv["completed"] for lv in out_levels):
        raise GpuFleetError(nothing_completed(out_levels, params.get("max_error_samples", 5)), result=result)
    return result


def _workload(params):
    """The workload (None: random prompts), checked against category_passes."""
    workload = load_workload(params.get("workload"), params.get("seed") or 0)
    if params.get("category_passes") and not (workload and workload.info["categories"]):
        raise InvalidInput("category_passes: the workload has no categories (%s); give a workload whose items "
                           "have categories (source: builtin, or a file with a category field), or leave "
                           "category_passes out" % ("random prompts" if not workload else "no item has one"))
    return workload


def _api(params, workload):
    """The API the requests go to: the option, else chat for a workload and completions for random prompts."""
    api = params.get("api") or ("chat" if workload else "completions")
    if workload and api == "completions":
        for item in workload.items:
            if item.text is None:
                raise InvalidInput("api: completions sends one text prompt, but workload item %s is a conversation "
                                   "(%d turns, %d messages): use api: chat" % (item.ref, item.turns, len(item.messages)))
    return api


def _server(params):
    """The server's record: base_url, the side-read client, the model (given, else the first it
    lists) and the engine (given, else told from its answers; 'unknown' when none says)."""
    base_url = params["base_url"]
    # Side reads outside the timed levels; /metrics can be large, so read it whole.
    client = HttpClient(server_root(base_url), params.get("api_key"), params.get("validate_certs", True), user_agent=USER_AGENT,
                        accept=None, timeout=min(params["request_timeout"], 30.0), max_body=None)

    answer = client.get("/v1/models")
    if answer.status is None:
        raise GpuFleetError("no answer from %s/v1/models: %s" % (client.base_url, answer.error))
    models = answer.json() if answer.status == 200 else None
    model = params.get("model")
    if not model:
        cards = (models or {}).get("data") or []
        if not cards:
            raise GpuFleetError("model not given and %s/v1/models listed none (HTTP %s)"
                                % (client.base_url, answer.status))
        model = cards[0]["id"]

    engine = params.get("engine") or "auto"
    if engine == "auto":
        metrics = client.get("/metrics")
        engine = detect_engine(models, metrics.text if metrics.status == 200 else "", read_server_info(client))
    return {"base_url": base_url, "client": client, "model": model, "engine": engine}


class Sweep:
    """The levels of one run: each level's record (its repeats combined, its category passes)."""

    def __init__(self, params: dict, workload: Any, api: str, server: dict, levels: list) -> None:
        self.params = params
        self.workload = workload
        self.api = api
        self.model = server["model"]
        base_url = server["base_url"]
        context = ssl_context(params.get("validate_certs", True)) if base_url.startswith("https") else None
        try:
            self.endpoint = Endpoint(base_url, params.get("api_key"), context)
        except ValueError as exc:
            raise InvalidInput(str(exc))
        self.meter = AcceptanceMeter(server["client"], server["engine"])
        self.writer = RecordWriter(params.get("request_records"))
        # Per-request acceptance, where the engine answers it, is asked for only where something
        # uses it: the records, or the figures per category.
        wanted = self.writer.path or (workload and workload.info["categories"])
        known = _registry.find(server["engine"])
        self.extra = known.per_request_acceptance if wanted and known else None
        self.fixed_output = ((params.get("workload") or {}).get("output_len_mode") or "fixed") == "fixed"

        self.seed = params.get("seed") or 0
        self.serial = self.seed * 1000003  # every prompt of the run differs (no prefix-cache hits)
        self.lengths = random.Random(self.seed)  # random input/output lengths with a range ratio, reproducible
        self.ratio = params.get("range_ratio") or 1.0
        self.rates = params.get("request_rates") or []
        self.cap = params.get("max_concurrency")
        self.slo = (params.get("slo_ttft_ms"), params.get("slo_tpot_ms"), params.get("slo_e2e_ms"))
        self.repeats = params.get("repeats") or 1
        self.progress = LevelProgress(params.get("progress_file"), len(self.rates or levels), self.repeats)
        self.plan = [(None, r) for r in self.rates] if self.rates else [(lv, None) for lv in levels]
        self.passes = bool(params.get("category_passes"))
        self.expected = (params["output_len"] if self.ratio == 1.0 and params.get("ignore_eos", True)
                         and self.fixed_output else None)
        self.telemetry = NoTelemetry()

    def level(self, index: int, level: int | None, rate: float | None) -> dict:
        """The record of one level (LEVEL concurrent requests, or RATE requests a second): its
        repeats combined, then each category's pass alone when category_passes asks for them."""
        size = level or self.cap or 1  # what default request counts scale with
        n = self.params.get("requests_per_level") or default_requests(size)
        default_w = (self.cap or 0) if rate else level
        w = default_w if self.params.get("warmup_requests") is None else self.params["warmup_requests"]
        runs = [self.repeat(index, level, rate, n, w, r) for r in range(self.repeats)]
        lv = runs[0] if self.repeats == 1 else combine(runs)
        self.progress.level_end(index, lv)
        if self.passes:
            for category in sorted(lv.get("categories") or {}):
                lv["categories"][category] = self.category_pass(index, level, rate, n, w, lv, category)
        return lv

    def repeat(self, index: int, level: int | None, rate: float | None, n: int, w: int, r: int = 0) -> dict:
        """The record of repeat R of a level: W warm-up and N counted requests, timed."""
        items, bodies = self.bodies(n, w)
        self.progress.level_start(index, level, rate, *_sent(items, n, w), repeat=r)
        lv, records = self.timed(bodies, level, rate, w, index)
        lv["categories"] = by_category(records, items, w)
        self.writer.level(index, lv, records, items, w)
        return lv

    def category_pass(self, index: int, level: int | None, rate: float | None, n: int, w: int, lv: dict,
                      category: str) -> dict:
        """The category's figures in LV with its pass alone added: one pass of this category's
        items, the level's size: its tok/s, and its acceptance from the counters where the
        engine answers none per request."""
        items = self.workload.of_category(category).items_for(n, w)
        self.progress.pass_start(index, level, rate, category, *_sent(items, n, w))
        alone, records = self.timed(self.jobs(items), level, rate, w, index)
        return with_pass(lv["categories"][category], alone, (by_category(records, items, w) or {}).get(category))

    def bodies(self, n: int, w: int) -> tuple:
        """(the workload items or None, the request bodies) of one pass: W warm-up, then N counted."""
        if self.workload:
            # Every level sends the same counted items (the sample from its start); the warm-up
            # takes the items after them, so it does not prime the counted prompts' cache.
            items = self.workload.items_for(n, w)
            return items, self.jobs(items)
        p = self.params
        bodies = []
        for unused in range(w + n):
            bodies.append(request_body(self.api, self.model, _length(self.lengths, p["input_len"], self.ratio),
                                       _length(self.lengths, p["output_len"], self.ratio), self.serial,
                                       p.get("temperature", 0.0), p.get("ignore_eos", True)))
            self.serial += 1
        return None, bodies

    def jobs(self, items: list) -> list:
        p = self.params
        return workload_jobs(items, self.api, self.model, p["output_len"], self.fixed_output,
                             p.get("temperature", 0.0), p.get("ignore_eos", True), self.extra)

    def timed(self, bodies: list, level: int | None, rate: float | None, w: int, index: int) -> tuple:
        """One timed pass of BODIES (the first W the warm-up): its figures and its records, with
        the acceptance and the server's rate from the counters read before and after it."""
        p = self.params
        before = self.meter.snapshot()
        self.telemetry.begin()
        records = run_level(self.endpoint, PATHS[self.api], bodies, level, p["request_timeout"],
                            connection=p.get("connection") or "keep_alive", request_rate=rate,
                            burstiness=p.get("burstiness") or 1.0, max_concurrency=self.cap,
                            seed=self.seed + index)
        after = self.meter.snapshot_after(before)
        accept, source = self.meter.measure(before, after)
        warm_records, counted_records = flatten(records[:w]), flatten(records[w:])
        concurrency = level if level else (self.cap or _peak_in_flight(warm_records + counted_records))
        lv = level_metrics(concurrency, counted_records, w, p.get("max_error_samples", 5), self.expected,
                           warmup=warm_records, slo=self.slo)
        lv["request_rate"] = rate
        lv["accept_length"], lv["accept_source"] = accept, source
        lv.update(server_rate(before, after, lv))
        start, end = window_bounds(counted_records)
        lv.update(self.telemetry.level(start, end, lv["output_tokens"]))
        return lv, records


def _result(params, sweep, server, out_levels, started, t0):
    """The module's result of a finished sweep: the levels, their summary, the server, the
    workload and the settings the run used."""
    result = {
        "levels": out_levels,
        "summary": summary(out_levels),
        # flavor: the engine under its old name, a deprecated return key (llm_benchmark RETURN says so).
        "server": {"base_url": server["base_url"], "model": server["model"], "engine": server["engine"],
                   "flavor": server["engine"]},
        "workload": sweep.workload.info if sweep.workload else {"source": "random"},
        "config": {
            "api": sweep.api,
            "input_len": params["input_len"],
            "output_len": params["output_len"],
            "requests_per_level": params.get("requests_per_level"),
            "warmup_requests": params.get("warmup_requests"),
            "temperature": params.get("temperature", 0.0),
            "ignore_eos": params.get("ignore_eos", True),
            "range_ratio": sweep.ratio,
            "request_rates": sweep.rates or None,
            "burstiness": params.get("burstiness") or 1.0,
            "max_concurrency": sweep.cap,
            "connection": params.get("connection") or "keep_alive",
            "seed": sweep.seed,
            "repeats": sweep.repeats,
            "slo_ttft_ms": sweep.slo[0],
            "slo_tpot_ms": sweep.slo[1],
            "slo_e2e_ms": sweep.slo[2],
        },
        "started": started,
        "elapsed": round(time.monotonic() - t0, 3),
    }
    if sweep.writer.path:
        result["request_records"] = sweep.writer.path
    return result


def nothing_completed(levels: list, samples: int) -> str:
    """The failure message of a sweep in which no request of any level completed."""
    errors = []
    for lv in levels:
        for err in lv["errors"]:
            if err not in errors and len(errors) < max(samples, 1):
                errors.append(err)
    return ("every request of every level failed (%d requests): no figure was measured; first errors: %s"
            % (sum(lv["requests"] for lv in levels), " | ".join(errors) or "none recorded"))


def _length(rng, full, ratio):
    """full, or uniform in [max(int(full * ratio), 1), full] (bench_serving's compute_random_lens)."""
    if ratio >= 1.0:
        return full
    return rng.randint(max(int(full * ratio), 1), full)


def _peak_in_flight(records):
    """Most requests in flight at once (an open-loop level without a cap)."""
    events = []
    for r in records:
        if r is not None and r.start is not None and r.end is not None:
            events += [(r.start, 1), (r.end, -1)]
    peak = now = 0
    for unused, step in sorted(events, key=lambda e: (e[0], e[1])):
        now += step
        peak = max(peak, now)
    return peak


def server_rate(before: dict | None, after: dict | None, lv: dict) -> dict:
    """The server counter's output rate over the level, and the client's count over it.

    Taken over the whole level (snapshots before its first request and after its last,
    nothing in flight at either), because SGLang counts a request's tokens when it
    finishes: a counter read inside the level misses the tokens of requests in flight.
    server_ratio = tokens the client received in the level / the counter's delta.
    server_req_s = the finished-request counter's delta over the level span.
    """
    out = {"server_tok_s": None, "server_ratio": None, "server_req_s": None}
    if before is None or after is None:
        return out
    done = [counter(snap, REQUEST_COUNTERS) for snap in (before, after)]
    if None not in done and lv.get("level_span_s") and done[1] > done[0]:
        out["server_req_s"] = round((done[1] - done[0]) / lv["level_span_s"], 3)
    a, b = counter(after, GENERATION_COUNTERS), counter(before, GENERATION_COUNTERS)
    span = lv.get("level_span_s")
    if a is None or b is None or not span:
        return out
    delta = a - b
    if delta <= 0:
        return out
    out["server_tok_s"] = round(delta / span, 3)
    out["server_ratio"] = round(lv["level_output_tokens"] / delta, 4)
    return out


class LevelProgress:
    """One line per level (and repeat) start and end, appended to a file on the host (tail -f
    it). A start line splits what it sends into warm-up and counted requests, so the counted
    ones agree with the end line's "M/M ok" (summed over the repeats)."""

    def __init__(self, path: str | None, total: int, repeats: int = 1) -> None:
        self.path = os.path.abspath(os.path.expanduser(path)) if path else None
        self.total = total
        self.repeats = repeats
        if self.path:
            try:
                with open_owned(self.path, "w") as f:
                    f.write("%s llm_benchmark: %d levels%s\n" % (
                        _now(), total, ", %d repeats each" % repeats if repeats > 1 else ""))
            except OSError as exc:  # before any load is sent: fail now, with the reason
                raise InvalidInput("cannot write progress_file %s: %s" % (self.path, exc))

    def _line(self, text):
        if self.path:
            try:
                with open_owned(self.path, "a") as f:
                    f.write("%s %s\n" % (_now(), text))
            except OSError as exc:
                raise GpuFleetError("cannot write progress_file %s: %s" % (self.path, exc))

    @staticmethod
    def _name(level, rate):
        return "rate %g req/s" % rate if rate else "concurrency %d" % level

    @staticmethod
    def _sent(counted: int, warmup: int) -> str:
        return "%d requests sent (%d warm-up, %d counted)..." % (warmup + counted, warmup, counted)

    def level_start(self, index: int, level: int | None, rate: float | None, counted: int, warmup: int = 0,
                    repeat: int = 0) -> None:
        name = self._name(level, rate)
        which = ", repeat %d/%d" % (repeat + 1, self.repeats) if self.repeats > 1 else ""
        self._line("level %d/%d %s%s: %s" % (index + 1, self.total, name, which, self._sent(counted, warmup)))

    def pass_start(self, index: int, level: int | None, rate: float | None, category: str, counted: int,
                   warmup: int = 0) -> None:
        self._line("level %d/%d %s, category %s alone: %s"
                   % (index + 1, self.total, self._name(level, rate), category, self._sent(counted, warmup)))

    def level_end(self, index: int, lv: dict) -> None:
        over = " over %d repeats" % self.repeats if self.repeats > 1 else ""
        self._line("level %d/%d %s: done in %ss, %s/%s ok%s, %s tok/s, TTFT p50 %s ms, TPOT p50 %s ms" % (
            index + 1, self.total, self._name(lv["concurrency"], lv["request_rate"]), lv["level_span_s"],
            lv["completed"], lv["requests"], over, lv["output_tok_s"], lv["ttft_ms"]["p50"], lv["tpot_ms"]["p50"]))


def _sent(items: list | None, n: int, w: int) -> tuple:
    """(counted, warm-up) requests a pass sends: a conversation's every turn is a request, so
    a workload of conversations sends more requests than items (the end line counts turns)."""
    if not items:
        return n, w
    return _turns(items[w:]), _turns(items[:w])


def _turns(items: list) -> int:
    return sum(1 + len(getattr(item, "followups", None) or ()) for item in items)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")


def write_output(path: str, result: dict) -> str:
    """Write the result as JSON atomically (a reader never sees half a file)."""
    shown = path
    try:
        path = os.path.abspath(os.path.expanduser(path))
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            os.makedirs(directory)
        write_atomic(path, json.dumps(result, indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        raise GpuFleetError("cannot write %s: %s" % (shown, exc))
    return path


def benchmark(params: dict, check_mode: bool = False, telemetry: Any = None) -> dict:
    """The llm_benchmark module's result: the sweep, and O(output) and O(request_records) written unless in check mode.

    telemetry: run_benchmark's telemetry factory (llm_benchmark passes _gpu's)."""
    if check_mode:
        params = dict(params, request_records=None)
    result = run_benchmark(params, telemetry)
    changed = False
    if params.get("output"):
        changed = True  # every run's timings differ, so the file always changes
        if not check_mode:
            result["output"] = write_output(params["output"], result)
    result["changed"] = changed
    return result
