# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Workload items as request jobs, and one JSONL line per request sent (`request_records`).

The lines are written after each level, outside its timed window, so keeping them costs
the load nothing. Times are milliseconds; the ITL summary is over the request's
per-chunk gaps (one gap per streamed chunk, whatever tokens it carried).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Conversation
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.stats import percentile
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._files import open_owned


def workload_jobs(items: list, api: str, model: str, output_len: int, fixed_output: bool, temperature: float,
                  ignore_eos: bool, extra: dict | None = None) -> list:
    """One job per item: the request's bytes for one turn, a Conversation for several."""
    jobs = []
    for item in items:
        max_tokens = output_len if fixed_output or not item.output_len else item.output_len
        conv = Conversation(item, api, model, max_tokens, temperature, ignore_eos, extra)
        jobs.append(conv if item.followups else conv.first())
    return jobs


def flatten(records: list) -> list:
    """The Records of a level's jobs in order, a Conversation's turns in turn order."""
    out = []
    for r in records:
        if isinstance(r, list):
            out.extend(r)
        elif r is not None:
            out.append(r)
    return out


def _ms(x):
    return None if x is None else round(x * 1000.0, 3)


def request_line(rec: Any, level: int, concurrency: int | None, rate: float | None, warmup: bool, item: Any = None,
                 turn: int = 0) -> dict:
    """One request's record: what it was, what it measured, how it ended."""
    gaps = [b - a for a, b in zip(rec.chunk_times, rec.chunk_times[1:])]
    spec = rec.spec if isinstance(rec.spec, dict) else None
    return {
        "level": level,
        "concurrency": concurrency,
        "request_rate": rate,
        "warmup": warmup,
        "item": item.ref if item is not None else None,
        "category": item.category if item is not None else None,
        "turn": turn,
        "ok": rec.ok,
        "error": None if rec.ok else (rec.error or "no output"),
        "prompt_tokens": rec.prompt_tokens,
        "output_tokens": rec.tokens if (rec.chunk_times or rec.usage_reported) else None,
        "finish_reason": rec.finish_reason,
        "ttft_ms": _ms(rec.first - rec.start) if rec.first is not None and rec.start is not None else None,
        "e2e_ms": _ms(rec.end - rec.start) if rec.end is not None and rec.start is not None else None,
        "chunks": len(rec.chunk_times),
        "itl_chunk_ms": {
            "mean": _ms(sum(gaps) / len(gaps)) if gaps else None,
            "p50": _ms(percentile(gaps, 50)),
            "p90": _ms(percentile(gaps, 90)),
            "max": _ms(max(gaps)) if gaps else None,
        },
        "accept_length": spec.get("spec_accept_length") if spec else None,
        "spec_verify_ct": spec.get("spec_verify_ct") if spec else None,
    }


class RecordWriter:
    """Appends the request lines of each level to a JSONL file on the host (nothing without a path)."""

    def __init__(self, path: str | None) -> None:
        self.path = os.path.abspath(os.path.expanduser(path)) if path else None
        if self.path:
            try:
                with open_owned(self.path, "w"):
                    pass
            except OSError as exc:  # before any load is sent: fail now, with the reason
                raise InvalidInput("cannot write request_records %s: %s" % (self.path, exc))

    def level(self, index: int, lv: dict, records: list, items: list | None, warmup: int) -> None:
        if not self.path:
            return
        lines = []
        for j, recs in enumerate(records):
            item = items[j] if items else None
            for turn, rec in enumerate(recs if isinstance(recs, list) else [recs]):
                if rec is not None:
                    lines.append(json.dumps(request_line(rec, index, lv["concurrency"], lv.get("request_rate"),
                                                         j < warmup, item, turn), sort_keys=True))
        try:
            with open_owned(self.path, "a") as f:
                f.write("".join(line + "\n" for line in lines))
        except OSError as exc:
            raise GpuFleetError("cannot write request_records %s: %s" % (self.path, exc))
