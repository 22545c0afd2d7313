# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait until a server has no request in flight, by its own count (server_drain).

The count is the server's, not a router's or a client's: running plus waiting requests where the
engine reports them (the engine's `in_flight`: SGLang's /v1/loads, vLLM's gauges). A router that
no longer sends traffic here does not know what is still being generated; the server does.
It only reads, so it can run before a stop: SGLang keeps accepting requests while it drains on
SIGTERM, vLLM aborts them unless --shutdown-timeout is set (sim/README.md, "Shutdown").
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils import _prom
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import Engine
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient, server_root

SERIES_POINTS = 40  # the in-flight series keeps this many changes (the first one, then the latest)


class ReadError(GpuFleetError):
    """The server did not give its count; the message says what it answered."""


def detect_engine(client: HttpClient) -> Engine:
    """The engine that serves at the client's URL, from /v1/models' `owned_by` (both engines fill it)."""
    answer = client.get("/v1/models")
    doc = answer.json() if answer.status == 200 else None
    cards = doc.get("data") if isinstance(doc, dict) else None
    for card in cards if isinstance(cards, list) else []:
        found = registry.find(str(card.get("owned_by", "")).lower()) if isinstance(card, dict) else None
        if found is not None:
            return found
    hint = ", or api_key to the server's key" if answer.status in (401, 403) else ""
    raise InvalidInput("cannot tell which engine serves at %s (GET /v1/models: %s): set engine to one of %s%s"
                       % (client.base_url, answer.status or answer.error, ", ".join(registry.names()), hint))


def read_in_flight(client: HttpClient, engine: Engine) -> tuple:
    """(running, waiting) as the server counts them; waiting is 0 where it reports no queue."""
    spec = engine.in_flight
    answer = client.get(spec.path)
    where = "GET %s%s" % (client.base_url, spec.path)
    if answer.status != 200:
        hint = " (set api_key to the server's key)" if answer.status in (401, 403) else ""
        raise ReadError("%s answered %s%s" % (where, answer.status or answer.error, hint))
    if spec.entries:
        doc = answer.json()
        entries = doc.get(spec.entries) if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise ReadError("%s is not the %s load report: no %r list" % (where, engine.title, spec.entries))
        running = sum(int(e.get(spec.running) or 0) for e in entries)
        waiting = sum(int(e.get(spec.waiting) or 0) for e in entries) if spec.waiting else 0
        return running, waiting
    try:
        page = _prom.samples(answer.text, where)
    except _prom.MetricsPageError as exc:
        raise ReadError(str(exc)) from None
    running = _prom.total(page, spec.running)
    if running is None:
        raise ReadError("%s has no %s gauge: is this %s?" % (where, spec.running, engine.title))
    waiting = (_prom.total(page, spec.waiting) or 0) if spec.waiting else 0
    return int(running), int(waiting)


class Series:
    """The in-flight count over time: a point at the start and at each change, the latest kept."""

    def __init__(self, limit: int = SERIES_POINTS) -> None:
        self.limit = limit
        self.points: list = []

    def add(self, at: float, running: int, waiting: int) -> None:
        if self.points and (self.points[-1]["running"], self.points[-1]["waiting"]) == (running, waiting):
            return
        self.points.append({"t": round(at, 3), "running": running, "waiting": waiting,
                            "in_flight": running + waiting})
        if len(self.points) > self.limit:
            del self.points[1]  # the first point stays: where the drain started from


def _result(engine: Engine, url: str, drained: bool, elapsed: float, running: int, waiting: int,
            series: Series, polls: int) -> dict:
    return {"changed": False, "drained": drained, "drain_s": round(elapsed, 3), "engine": engine.name,
            "url": url, "source": url + engine.in_flight.path, "in_flight": running + waiting,
            "running": running, "waiting": waiting, "series": series.points, "polls": polls,
            "request_ids": None, "request_ids_source": engine.in_flight.request_ids}


def drain_server(params: dict, check_mode: bool = False, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] = time.sleep) -> dict:
    """Poll every poll_interval until the server's running + waiting count is 0, for at most
    drain_timeout seconds. Check mode reads once and never waits or fails on a busy server."""
    timeout, interval = float(params["drain_timeout"]), float(params["poll_interval"])
    if timeout < 0 or interval <= 0:
        raise InvalidInput("drain_timeout must be 0 or more and poll_interval more than 0 (got %s and %s)"
                           % (params["drain_timeout"], params["poll_interval"]))
    url = server_root(params["base_url"])
    client = HttpClient(url, params.get("api_key"), params.get("validate_certs", True),
                        user_agent="gpufleet.serving.server_drain", accept=None,
                        timeout=float(params["request_timeout"]))
    name = params.get("engine") or "auto"
    engine = detect_engine(client) if name == "auto" else registry.get(name)
    start = clock()
    deadline = start + timeout
    series, polls = Series(), 0
    while True:
        running, waiting = read_in_flight(client, engine)
        polls += 1
        now = clock()
        series.add(now - start, running, waiting)
        if running + waiting == 0 or check_mode:
            return _result(engine, url, running + waiting == 0, now - start, running, waiting, series, polls)
        if now >= deadline:
            break
        sleep(min(interval, deadline - now))
    result = _result(engine, url, False, clock() - start, running, waiting, series, polls)
    ids = engine.in_flight.request_ids
    raise GpuFleetError(
        "%s still has %d requests in flight (%d running, %d waiting) after drain_timeout=%ss; %s %s. Raise "
        "drain_timeout, or find what keeps them running (a stuck or endless stream) before stopping the server"
        % (url, running + waiting, running, waiting, params["drain_timeout"], engine.title,
           "names its requests " + ids if ids else "names no request in flight"), result=result)
