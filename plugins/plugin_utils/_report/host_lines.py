# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one line each fleet playbook prints for a host: swap_to_eagle.yml, swap_to_base.yml,
launch.yml, teardown.yml and benchmark.yml (reset.yml's table: reset.py).

Every name and message in a line (host, stage, reason, URL, killed command) goes through
md_text: one line, no control character, and no Markdown or HTML markup wherever the line is
rendered; the records (the summary JSON) keep them exact."""

from __future__ import annotations

from typing import Any, Mapping

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.text import DASH, absent, num, short_command, text


def swap_line(result: Mapping[str, Any]) -> str:
    """The one line swap_to_eagle.yml (and swap_to_base.yml, for a failure) prints for a host."""
    host = md_text(result["host"])
    if result.get("outcome") != "ok":
        line = "%s: %s at stage %s: %s" % (host, md_text(str(result.get("outcome", "failed")).upper()),
                                           md_text(result.get("stage", "start")), md_text(result.get("reason", "")))
        if result.get("server_left") is not None:
            line += "; server left: %s" % md_text(result["server_left"])
        return line
    killed = result.get("killed")
    base_ready = result.get("base_ready_seconds")
    return (
        "%s: ok, single-stream %s -> %s tok/s, peak %s -> %s tok/s, accept length %s; "
        "teardown %s s (%s processes signalled after the stop); EAGLE-3 ready in %s s, base server %s"
        % (host, num(result.get("baseline_tok_s")), num(result.get("eagle_tok_s")),
           num(result.get("baseline_peak_tok_s")), num(result.get("eagle_peak_tok_s")),
           num(result.get("accept_length"), 2), num(result.get("release_seconds"), 2),
           DASH if absent(killed) else killed, num(result.get("eagle_ready_seconds"), 2),
           "kept running" if absent(base_ready) else "ready in %s s" % num(base_ready, 2))
        + _energy_and_health(result)
        + wl.random_suffix(result.get("workload"), result.get("accept_length")))


def _energy_and_health(result: Mapping[str, Any]) -> str:
    """The best tok/J of each run (THROTTLED when a level's GPUs were) and the GPUs' health judged before the
    EAGLE-3 server's start; nothing for what was not measured."""
    out = ""
    if not absent(result.get("eagle_tok_per_j")):
        out += "; best tok/J %s -> %s%s" % (
            num(result.get("baseline_tok_per_j"), 3), num(result["eagle_tok_per_j"], 3),
            " THROTTLED" if result.get("throttled") else "")
    if not absent(result.get("gpu_health")):
        out += "; GPU health %s" % md_text(result["gpu_health"])
    return out


def base_line(host: str, server: Mapping[str, Any], teardown: Any = None, bench: Any = None) -> str:
    """swap_to_base.yml's line for a host whose base server runs. SERVER is
    the server's result fact (fleet_server), TEARDOWN its teardown fact (None when there was none),
    BENCH the llm_benchmark result (None without swap_benchmark)."""
    relaunched = bool(server.get("relaunched"))
    line = "%s: ok, base server at %s %s" % (
        md_text(host), md_text(server.get("base_url")),
        "relaunched, ready in %s s" % num(server.get("ready_seconds"), 2) if relaunched
        else "kept running (already the base server)")
    if relaunched and isinstance(teardown, Mapping) and teardown:
        line += "; the previous server's teardown took %s s" % num(teardown.get("release_seconds"), 2)
    if isinstance(bench, Mapping) and bench.get("summary"):
        line += "; peak %s tok/s" % num(bench["summary"].get("peak_tok_s"))
    return line


def launch_line(host: str, server: Mapping[str, Any]) -> str:
    """launch.yml's line for a host: the server's URL, relaunched (seconds until ready) or kept."""
    return "%s: %s %s" % (md_text(host), md_text(server.get("base_url")),
                          "relaunched, ready after %s s" % num(server.get("ready_seconds"), 2)
                          if server.get("relaunched") else "kept running (healthy, same configuration)")


def teardown_line(host: str, teardown: Mapping[str, Any], instance: str) -> str:
    """teardown.yml's line for a host: whether the server ran, the release's seconds and the
    processes it signalled (with their titles when TEARDOWN names them: vllm_server's
    killed_titles)."""
    line = ("%s: stopped %s (was running: %s); GPUs verified free after %s s, %s processes signalled by the release"
            % (md_text(host), md_text(instance), teardown.get("stopped"), num(teardown.get("release_seconds"), 2),
               teardown.get("killed")))
    titles = [md_text(short_command(str(t))) for t in teardown.get("killed_titles") or []]
    if titles:
        # vllm_server names them: e.g. a VLLM::EngineCore left behind by a killed API server.
        line += " (%s)" % ", ".join(titles)
    return line


def bench_line(host: str, url: str, run: Any = None, error: Any = None) -> str:
    """benchmark.yml's line for a host: its figures (RUN, the llm_benchmark result) or,
    with ERROR (the failed task's message), the failure. An acceptance length measured on
    random prompts carries the reports' warning."""
    if error is not None or not isinstance(run, Mapping):
        return "%s: FAILED, %s: %s" % (md_text(host), md_text(url), md_text(text(error if error is not None else "failed")))
    summary = run.get("summary") or {}
    return ("%s: ok, %s: single-stream %s tok/s, peak %s tok/s at %s, accept length %s, %s failed requests"
            % (md_text(host), md_text(url), num(summary.get("single_stream_tok_s")), num(summary.get("peak_tok_s")),
               summary.get("peak_concurrency"), num(summary.get("accept_length"), 2),
               summary.get("failed"))
            + wl.random_suffix(wl.describe(run), summary.get("accept_length")))
