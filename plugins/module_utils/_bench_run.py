# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The llm_benchmark sweep: find the model and flavor, run each level, summarise."""

from __future__ import annotations

import datetime
import json
import os
import ssl
import time

from ansible_collections.gpufleet.serving.plugins.module_utils._bench_accept import (
    AcceptanceMeter, Probe, detect_flavor,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._bench_client import request_body
from ansible_collections.gpufleet.serving.plugins.module_utils._bench_http import Target
from ansible_collections.gpufleet.serving.plugins.module_utils._bench_load import run_level
from ansible_collections.gpufleet.serving.plugins.module_utils._bench_stats import level_metrics, summary
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._files import write_atomic

DEFAULT_LEVELS = [1, 2, 4, 8, 16, 32, 64, 128]
PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def default_requests(level):
    """max(2 x level, 8), rounded up to whole waves of `level` so the level ends full."""
    n = max(2 * level, 8)
    return -(-n // level) * level


def _check(params):
    levels = params.get("levels") or DEFAULT_LEVELS
    if any(lv < 1 for lv in levels):
        raise InvalidInput("levels must all be >= 1, got %s" % levels)
    for key in ("input_len", "output_len"):
        if params[key] < 1:
            raise InvalidInput("%s must be >= 1" % key)
    if params.get("requests_per_level") is not None and params["requests_per_level"] < 1:
        raise InvalidInput("requests_per_level must be >= 1")
    if params.get("warmup_requests") is not None and params["warmup_requests"] < 0:
        raise InvalidInput("warmup_requests must be >= 0")
    return levels


def run_benchmark(params):
    """The module's result (without `changed`) for the validated parameters."""
    levels = _check(params)
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    t0 = time.monotonic()
    base_url = params["base_url"]
    probe = Probe(base_url, params.get("api_key"), params.get("validate_certs", True),
                  timeout=min(params["request_timeout"], 30.0))

    status, body = probe.get("/v1/models")
    if status is None:
        raise GpuFleetError("no answer from %s/v1/models: %s" % (probe.base, body))
    models = None
    if status == 200:
        try:
            models = json.loads(body)
        except ValueError:
            models = None
    model = params.get("model")
    if not model:
        cards = (models or {}).get("data") or []
        if not cards:
            raise GpuFleetError("model not given and %s/v1/models listed none (HTTP %s)" % (probe.base, status))
        model = cards[0]["id"]

    flavor = params.get("flavor") or "auto"
    if flavor == "auto":
        m_status, m_text = probe.get("/metrics")
        info = probe.get_json("/server_info") or probe.get_json("/get_server_info")
        flavor = detect_flavor(models, m_text if m_status == 200 else "", info)

    context = None
    if base_url.startswith("https"):
        context = ssl.create_default_context()
        if not params.get("validate_certs", True):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        target = Target(base_url, params.get("api_key"), context)
    except ValueError as exc:
        raise InvalidInput(str(exc))
    meter = AcceptanceMeter(probe, flavor)

    out_levels = []
    seed = params.get("seed") or 0
    serial = seed * 1000003  # every prompt of the run differs (no prefix-cache hits)
    for level in levels:
        n = params.get("requests_per_level") or default_requests(level)
        w = level if params.get("warmup_requests") is None else params["warmup_requests"]
        bodies = []
        for unused in range(w + n):
            bodies.append(request_body(params["api"], model, params["input_len"], params["output_len"],
                                       serial, params.get("temperature", 0.0)))
            serial += 1
        before = meter.snapshot()
        records = run_level(target, PATHS[params["api"]], bodies, level, params["request_timeout"])
        accept, source = meter.measure(before)
        lv = level_metrics(level, records[w:], w, params.get("max_error_samples", 5), params["output_len"])
        lv["accept_length"], lv["accept_source"] = accept, source
        out_levels.append(lv)

    return {
        "levels": out_levels,
        "summary": summary(out_levels),
        "server": {"base_url": base_url, "model": model, "flavor": flavor},
        "config": {
            "api": params["api"],
            "input_len": params["input_len"],
            "output_len": params["output_len"],
            "requests_per_level": params.get("requests_per_level"),
            "warmup_requests": params.get("warmup_requests"),
            "temperature": params.get("temperature", 0.0),
        },
        "started": started,
        "elapsed": round(time.monotonic() - t0, 3),
    }


def write_output(path, result):
    """Write the result as JSON atomically (a reader never sees half a file)."""
    path = os.path.abspath(os.path.expanduser(path))
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
    write_atomic(path, json.dumps(result, indent=2, sort_keys=True) + "\n")
    return path
