# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server-counter comparison, random lengths, progress lines, option checks."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import run as br
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def test_server_rate_over_the_level():
    before = {"sglang:generation_tokens_total": 1000.0}
    after = {"sglang:generation_tokens_total": 1500.0}
    lv = {"level_span_s": 2.0, "level_output_tokens": 495}
    assert br.server_rate(before, after, lv) == {"server_tok_s": 250.0, "server_ratio": 0.99, "server_req_s": None}
    vllm = br.server_rate({"vllm:generation_tokens_total": 0.0}, {"vllm:generation_tokens_total": 500.0}, lv)
    assert vllm["server_tok_s"] == 250.0
    nothing = {"server_tok_s": None, "server_ratio": None, "server_req_s": None}
    assert br.server_rate(None, None, lv) == nothing
    assert br.server_rate(before, before, lv) == nothing


@pytest.mark.parametrize("name", ["sglang:num_requests_total", "vllm:request_success_total"])
def test_server_request_rate_over_the_level(name):
    lv = {"level_span_s": 4.0, "level_output_tokens": 0}
    out = br.server_rate({name: 10.0}, {name: 34.0}, lv)
    assert out["server_req_s"] == 6.0  # 24 requests finished in 4 s


def test_random_lengths_follow_the_range_ratio():
    rng = random.Random(1)
    lens = [br._length(rng, 100, 0.25) for unused in range(2000)]
    assert min(lens) == 25 and max(lens) == 100
    assert br._length(rng, 100, 1.0) == 100
    assert br._length(random.Random(1), 3, 0.1) >= 1


def test_the_requests_a_pass_sends_count_every_turn():
    single, conversation = SimpleNamespace(followups=()), SimpleNamespace(followups=["more", "again"])
    # Warm-up first (W items), then the counted ones; a conversation sends one request a turn.
    assert br._sent([single, conversation, single], 2, 1) == (4, 1)
    assert br._sent([conversation, single], 1, 1) == (1, 3)
    assert br._sent(None, 8, 2) == (8, 2)  # random prompts: one request each


def test_progress_lines(tmp_path):
    path = tmp_path / "d" / "p.log"
    prog = br.LevelProgress(str(path), 2)
    prog.level_start(0, 4, None, 8, 4)
    lv = {"concurrency": 4, "request_rate": None, "level_span_s": 1.5, "completed": 8, "requests": 8,
          "output_tok_s": 100.0, "ttft_ms": {"p50": 20.0}, "tpot_ms": {"p50": 10.0}}
    prog.level_end(0, lv)
    prog.level_start(1, None, 2.5, 10)
    prog.pass_start(1, None, 2.5, "code", 10, 2)
    lines = path.read_text().splitlines()
    assert lines[0].endswith("llm_benchmark: 2 levels")
    # The counted requests agree with the end line's "M/M ok".
    assert lines[1].endswith("level 1/2 concurrency 4: 12 requests sent (4 warm-up, 8 counted)...")
    assert "level 1/2 concurrency 4: done in 1.5s, 8/8 ok, 100.0 tok/s, TTFT p50 20.0 ms" in lines[2]
    assert lines[3].endswith("level 2/2 rate 2.5 req/s: 10 requests sent (0 warm-up, 10 counted)...")
    assert lines[4].endswith("level 2/2 rate 2.5 req/s, category code alone: 12 requests sent (2 warm-up, 10 counted)...")
    br.LevelProgress(None, 2).level_start(0, 1, None, 1)  # no file: nothing happens
    # Repeats are numbered, and the end line says its counts are summed over them.
    repeated = br.LevelProgress(str(tmp_path / "r.log"), 1, repeats=3)
    repeated.level_start(0, 4, None, 8, 4, 1)
    repeated.level_end(0, dict(lv, completed=24, requests=24))
    lines = (tmp_path / "r.log").read_text().splitlines()
    assert lines[0].endswith("llm_benchmark: 1 levels, 3 repeats each")
    assert lines[1].endswith("level 1/1 concurrency 4, repeat 2/3: 12 requests sent (4 warm-up, 8 counted)...")
    assert "done in 1.5s, 24/24 ok over 3 repeats, " in lines[2]
    (tmp_path / "f").write_text("")
    with pytest.raises(InvalidInput, match="cannot write progress_file"):
        br.LevelProgress(str(tmp_path / "f" / "p.log"), 1)  # its directory is a file


def test_a_refused_value_stops_the_run_before_anything_is_sent():
    with pytest.raises(InvalidInput, match="repeats must be >= 1, got 0"):
        br._check({"levels": [1], "input_len": 1, "output_len": 1, "repeats": 0})


def test_peak_in_flight():
    class R:
        def __init__(self, start, end):
            self.start, self.end = start, end
    assert br._peak_in_flight([R(0, 2), R(1, 3), R(2, 4), R(5, 6)]) == 2
