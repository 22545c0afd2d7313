# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/host_lines.py: the one line each fleet playbook prints for a host."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import host_lines
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl


def test_swap_line_of_a_failure_without_server_left():
    assert host_lines.swap_line({"host": "h", "outcome": "failed", "stage": "base", "reason": "T: m"}) \
        == "h: FAILED at stage base: T: m"


def test_base_line():
    server = {"base_url": "http://127.0.0.2:30000", "relaunched": True, "ready_seconds": 12.0}
    assert host_lines.base_line("h", server, {"release_seconds": 2.5}, {"summary": {"peak_tok_s": 99.96}}) == (
        "h: ok, base server at http://127.0.0.2:30000 relaunched, ready in 12.00 s; "
        "the previous server's teardown took 2.50 s; peak 100.0 tok/s")
    kept = dict(server, relaunched=False)
    assert host_lines.base_line("h", kept, {"release_seconds": 2.5}, None) == \
        "h: ok, base server at http://127.0.0.2:30000 kept running (already the base server)"


def test_bench_line():
    run = {"summary": {"single_stream_tok_s": None, "peak_tok_s": 10, "peak_concurrency": 4,
                       "accept_length": 1.5, "failed": 0}}
    assert host_lines.bench_line("h", "http://u", run) == \
        "h: ok, http://u: single-stream - tok/s, peak 10.0 tok/s at 4, accept length 1.50, 0 failed requests"
    assert host_lines.bench_line("h", "http://u", error=" refused\n") == "h: FAILED, http://u: refused"


@pytest.mark.parametrize("workload, accept, warned", [
    (None, 2.1, True),  # a result without `workload` measured random prompts
    ({"source": "random"}, 2.1, True),
    ({"source": "builtin", "name": "mixed"}, 2.1, False),
    ({"source": "random"}, None, False),  # no acceptance measured: nothing to warn about
])
def test_bench_line_warns_of_acceptance_on_random_prompts(workload, accept, warned):
    summary = {"single_stream_tok_s": 9.0, "peak_tok_s": 10.0, "peak_concurrency": 1, "accept_length": accept,
               "failed": 0}
    run = {"levels": [{"concurrency": 1}], "summary": summary}
    if workload is not None:
        run["workload"] = workload
    line = host_lines.bench_line("h", "http://u", run)
    assert line.startswith("h: ok, http://u: single-stream 9.0 tok/s")
    assert line.endswith("; " + wl.RANDOM_LINE) is warned


def test_launch_and_teardown_lines():
    # scripts/demo.sh reads "relaunched, ready after S s".
    assert host_lines.launch_line("h", {"base_url": "http://a", "relaunched": True, "ready_seconds": 3}) \
        == "h: http://a relaunched, ready after 3.00 s"
    assert host_lines.launch_line("h", {"base_url": "http://a", "relaunched": False}) \
        == "h: http://a kept running (healthy, same configuration)"
    assert host_lines.teardown_line("h", {"stopped": True, "release_seconds": 0.5, "killed": 2}, "sglang-30000") == (
        "h: stopped sglang-30000 (was running: True); GPUs verified free after 0.50 s, "
        "2 processes signalled by the release")


def test_teardown_line_names_the_processes_vllm_server_killed():
    teardown = {"stopped": False, "release_seconds": 0.25, "killed": 3,
                "killed_titles": ["VLLM::EngineCore", "VLLM::Worker_TP0", "/opt/vllm/bin/python -m x"]}
    assert host_lines.teardown_line("h", teardown, "vllm-8000") == (
        "h: stopped vllm-8000 (was running: False); GPUs verified free after 0.25 s, 3 processes signalled "
        "by the release (VLLM::EngineCore, VLLM::Worker_TP0, python -m x)")


HOSTILE = "h|1 `x` *b* [l](http://e) <b>\n\x1b[31mfake: ok"


def _shown_as_text(line):
    # One line, every name's markup escaped, no control character.
    assert "\n" not in line and "\x1b" not in line and "<b>" not in line, line
    assert "`x`" not in line and " *b* " not in line and "[l](http" not in line and "h|1" not in line, line
    assert r"h\|1 \`x\` \*b\* \[l\](http://e) \<b\> \[31mfake: ok" in line, line


@pytest.mark.parametrize("make", [
    lambda: host_lines.swap_line({"host": HOSTILE, "outcome": "failed", "stage": HOSTILE, "reason": HOSTILE,
                                  "server_left": HOSTILE}),
    lambda: host_lines.swap_line({"host": HOSTILE, "outcome": "ok"}),
    lambda: host_lines.base_line(HOSTILE, {"base_url": HOSTILE}),
    lambda: host_lines.launch_line(HOSTILE, {"base_url": HOSTILE}),
    lambda: host_lines.teardown_line(HOSTILE, {"killed_titles": [HOSTILE]}, HOSTILE),
    lambda: host_lines.bench_line(HOSTILE, HOSTILE, error=HOSTILE),
    lambda: host_lines.bench_line(HOSTILE, HOSTILE, run={"summary": {}}),
])
def test_names_in_a_host_line_show_as_text(make):
    _shown_as_text(make())
