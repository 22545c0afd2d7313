# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench/records.py: the jobs of a workload, one request's line from a Record fed stream events,
and the JSONL file of request_records written level by level (a real file; a path that cannot
be written fails before any load, one that breaks later names itself)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import records as rr
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Conversation, Record
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.sample import load_workload
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput


def fed(times=(0.1, 0.15, 0.3), usage=3):
    """A request that started at 0 s and streamed one chunk at each of `times`."""
    rec = Record()
    rec.start = 0.0
    rec.on_status(200, {}, 0.0)
    for t in times:
        rec.on_event(json.dumps({"choices": [{"index": 0, "text": " a", "finish_reason": None}]}).encode(), t)
    rec.on_event(json.dumps({"choices": [{"index": 0, "text": "", "finish_reason": "length"}],
                             "usage": {"completion_tokens": usage, "prompt_tokens": 7}}).encode(), times[-1])
    rec.on_event(b"[DONE]", times[-1])
    rec.on_end(times[-1] + 0.05)
    return rec


def test_one_turn_items_are_request_bytes_and_multi_turn_ones_conversations():
    items = load_workload({"source": "builtin", "categories": ["math"]}, 0).items
    jobs = rr.workload_jobs(items, "chat", "m", 64, True, 0.0, True, {"top_k": 1})
    assert len(jobs) == len(items)
    for item, job in zip(items, jobs):
        if item.followups:
            assert isinstance(job, Conversation)
        else:
            body = json.loads(job)
            assert body["messages"] == item.messages and body["max_tokens"] == 64 and body["top_k"] == 1
    assert any(isinstance(j, Conversation) for j in jobs) and any(isinstance(j, bytes) for j in jobs)


def test_flatten_keeps_turn_order_and_drops_requests_never_sent():
    a, b, c = Record(), Record(), Record()
    assert rr.flatten([a, [b, c], None]) == [a, b, c]


def test_a_request_line_in_milliseconds_with_the_chunk_gaps():
    line = rr.request_line(fed(), 2, 8, None, False, turn=1)
    assert (line["level"], line["concurrency"], line["request_rate"], line["warmup"], line["turn"]) == (2, 8, None, False, 1)
    assert line["ok"] is True and line["error"] is None and line["item"] is None
    assert (line["prompt_tokens"], line["output_tokens"], line["finish_reason"]) == (7, 3, "length")
    assert (line["ttft_ms"], line["e2e_ms"], line["chunks"]) == (100.0, 300.0, 3)  # ends at [DONE]
    assert line["itl_chunk_ms"]["mean"] == 100.0 and line["itl_chunk_ms"]["max"] == 150.0
    assert line["accept_length"] is None


def test_a_request_without_output_has_no_timings():
    rec = Record()
    rec.start = 0.0
    rec.on_status(503, {}, 0.0)
    rec.on_end(0.01)
    line = rr.request_line(rec, 0, 1, 2.0, True)
    assert line["ok"] is False and line["error"] and line["ttft_ms"] is None and line["output_tokens"] is None
    assert line["itl_chunk_ms"] == {"mean": None, "p50": None, "p90": None, "max": None}


def test_the_file_gets_each_levels_lines_warmup_marked(tmp_path):
    path = tmp_path / "out" / "requests.jsonl"
    writer = rr.RecordWriter(str(path))
    assert path.read_text() == ""  # created empty before any load
    writer.level(0, {"concurrency": 2}, [fed(), [fed(), fed((0.2,))]], None, warmup=1)
    writer.level(1, {"concurrency": 4, "request_rate": 1.5}, [fed()], None, warmup=0)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["level"], x["warmup"], x["turn"]) for x in lines] == [(0, True, 0), (0, False, 0), (0, False, 1), (1, False, 0)]
    assert lines[3]["request_rate"] == 1.5
    rr.RecordWriter(None).level(0, {"concurrency": 1}, [fed()], None, 0)  # no path: nothing, no error


def test_a_path_that_cannot_be_written_fails_before_the_load_and_later_names_itself(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInput, match="cannot write request_records .*/file/r.jsonl"):
        rr.RecordWriter(str(tmp_path / "file" / "r.jsonl"))
    path = tmp_path / "r.jsonl"
    writer = rr.RecordWriter(str(path))
    path.unlink()
    path.mkdir()  # the file became a directory while the load ran
    with pytest.raises(GpuFleetError, match="cannot write request_records .*r.jsonl: .*Is a directory"):
        writer.level(0, {"concurrency": 1}, [fed()], None, 0)
