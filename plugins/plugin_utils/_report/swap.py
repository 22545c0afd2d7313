# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""swap_to_eagle.yml's records of a host: its first record, a completed host's figures, a failed
host's stage and the server it left, the gates, and the rollback to the base server. Each
record carries its line (host_lines.swap_line), and each gate its line: names in a line are
shown through md_text (a category's name in a per-category gate), the records keep them exact."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import gates as _gates
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import preset as _preset
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.batch import halt_batch
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.host_lines import swap_line
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.text import dig, num, succeeded, text

# Stages of swap_to_eagle.yml, in order. A failure in STAGES_UNTOUCHED happened before
# anything was stopped.
STAGES_UNTOUCHED = ("start", "baseline")

SERVER_LOST = "unknown (host lost)"
SERVER_BASE = "base server (not touched)"
SERVER_EAGLE = "EAGLE-3 server"
SERVER_MAYBE_NONE = "maybe none: the base server may be torn down; run swap_to_base.yml"
SERVER_RESTORED = "base server (restored, ready in %s s)"
SERVER_NOT_RESTORED = "maybe none: restoring the base server failed (%s); run swap_to_base.yml"
# Where the EAGLE-3 step may have stopped the base server: a rollback relaunches it.
ROLLBACK_FROM = (SERVER_MAYBE_NONE, SERVER_EAGLE)


def _with_line(record: dict) -> dict:
    record["line"] = swap_line(record)
    return record


def server_left(failure: Mapping[str, Any], drafter_check: Any = None, server: Any = None) -> str:
    """Which server a host runs after swap_to_eagle.yml failed on it.

    FAILURE is the failure's record (its `stage`, recorded before the failure: start,
    baseline, eagle, eagle_benchmark, gates; and `unreachable`), DRAFTER_CHECK the eagle_drafter
    role's registered drafter check (None when it never ran), SERVER the server's result fact
    (sglang_server_result or vllm_server_result: the playbooks' fleet_server). Until the
    drafter check has passed nothing was stopped; after it, the base server may be gone.
    """
    stage = failure.get("stage", "start")
    if failure.get("unreachable"):
        return SERVER_LOST
    if stage in STAGES_UNTOUCHED:
        return SERVER_BASE
    if stage == "eagle" and not succeeded(drafter_check):
        return SERVER_BASE
    if stage in ("eagle_benchmark", "gates") and isinstance(server, Mapping) and server.get("speculative"):
        return SERVER_EAGLE
    return SERVER_MAYBE_NONE


def swap_start(results: Iterable[Any], host: str, max_fail_percentage: Any = 100) -> dict:
    """swap_to_eagle.yml's first record of HOST: pending, or not_started (with its line) when
    more than MAX_FAIL_PERCENTAGE of the hosts done so far (RESULTS) failed (see halt_batch)."""
    if halt_batch(results, max_fail_percentage):
        return _with_line({"host": host, "outcome": "not_started", "stage": "start",
                           "reason": "more than %s%% of the hosts done so far failed" % max_fail_percentage})
    return {"host": host, "outcome": "pending", "stage": "start", "reason": ""}


def swap_record(runs: Mapping[str, Any], host: str, base_server: Any = None, server: Any = None,
                teardown: Any = None, gates: Any = None) -> dict:
    """swap_to_eagle.yml's record of a host that completed, with its line: RUNS holds the llm_benchmark
    results (`baseline`, absent without swap_baseline, and `candidate`), BASE_SERVER the
    server's result fact (fleet_server) of the baseline step, SERVER the EAGLE-3 server's, TEARDOWN
    its teardown fact (None when the base server was not torn down)."""
    return _with_line({
        "host": host, "outcome": "ok", "stage": "done", "reason": "",
        "baseline_tok_s": dig(runs, "baseline", "summary", "single_stream_tok_s"),
        "baseline_peak_tok_s": dig(runs, "baseline", "summary", "peak_tok_s"),
        "eagle_tok_s": dig(runs, "candidate", "summary", "single_stream_tok_s"),
        "eagle_peak_tok_s": dig(runs, "candidate", "summary", "peak_tok_s"),
        "accept_length": dig(runs, "candidate", "summary", "accept_length"),
        "base_ready_seconds": dig(base_server, "ready_seconds"),
        "eagle_ready_seconds": dig(server, "ready_seconds"),
        "release_seconds": dig(teardown, "release_seconds"),
        "killed": dig(teardown, "killed"),
        # The router side of the stop (router_url set): worker, drain_s, aborted; None without a router.
        "drain": dig(teardown, "drain"),
        "workload": wl.describe(dig(runs, "candidate")),
        "gates": list(gates or []),
        "baseline_tok_per_j": _best_tok_per_j(dig(runs, "baseline")),
        "eagle_tok_per_j": _best_tok_per_j(dig(runs, "candidate")),
        "throttled": any(lv.get("throttled") for side in ("baseline", "candidate")
                         for lv in dig(runs, side, "levels") or [] if isinstance(lv, Mapping)),
        "gpu_health": dig(server, "health", "verdict"),
    })


def _best_tok_per_j(run: Any) -> Any:
    """The highest output tokens per joule of RUN's levels (llm_benchmark's telemetry), or None."""
    found = [lv.get("output_tokens_per_joule") for lv in dig(run, "levels") or [] if isinstance(lv, Mapping)]
    found = [v for v in found if v is not None]
    return max(found) if found else None


def swap_gates(runs: Any, gates: Any) -> list:
    """swap_to_eagle.yml's gates: GATES (an experiment file's gates) checked on the EAGLE-3 run
    (RUNS.candidate) against the base server's (RUNS.baseline), each with its `line`. With RUNS
    null the gates are only checked for bad input (before anything runs). ValueError names the
    bad key (swap_gates.KEY) and what to change."""
    gates = gates or {}
    if not isinstance(gates, Mapping):
        raise ValueError("swap_gates must be a mapping of gates (%s), not %r" % (", ".join(_gates.GATE_NAMES), gates))
    for name in gates:
        if name not in _gates.GATE_NAMES:
            raise ValueError("swap_gates.%s: unknown gate; the gates: %s" % (name, ", ".join(_gates.GATE_NAMES)))
    for path, why in _gates.problems(gates):
        raise ValueError("swap_gates.%s: %s" % (".".join(str(p) for p in path), why))
    if runs is None:
        return []
    candidate = {"outcome": "ok", "speculative": True, "bench": dig(runs, "candidate")}
    baseline = {"outcome": "ok", "bench": dig(runs, "baseline")}
    out = []
    for entry in _gates.evaluate(candidate, baseline, dict(gates), reference_name="the base server"):
        entry = dict(entry)
        entry["line"] = md_text(_gates.entry_text(entry))
        out.append(entry)
    return out


def swap_failure(failure: Mapping[str, Any], drafter_check: Any = None, server: Any = None,
                 gates: Any = None) -> dict:
    """swap_to_eagle.yml's record of a failed host: FAILURE (the _fleet role's fleet_failure)
    with the server left on the host (server_left), whether restoring the base server is
    needed (`rollback_needed`), the gates when they were checked, and the host's line."""
    record = dict(failure)
    record["server_left"] = server_left(failure, drafter_check, server)
    record["rollback_needed"] = record["server_left"] in ROLLBACK_FROM
    record["gates"] = list(gates or [])
    return _with_line(record)


def swap_stage(step: Any, stage: Any = "launch") -> str:
    """swap_to_eagle.yml's name of the stage where its STEP (a variant of preset.swap_experiment)
    failed at the experiment's STAGE (launch or benchmark)."""
    if step == _preset.SWAP_CANDIDATE:
        return "eagle_benchmark" if stage == "benchmark" else "eagle"
    return "baseline"


def swap_step_failure(records: Any, failure: Any = None) -> Any:
    """swap_to_eagle.yml's failure of a host: the first of RECORDS (its experiment's variant
    records) that failed, with the stage named as the swap names it (swap_stage), or else
    FAILURE (the rescue's fleet_failure, for a failure outside the steps: planning, gates)."""
    for record in records or []:
        if isinstance(record, Mapping) and record.get("outcome") == "failed":
            host = record.get("host") or (failure or {}).get("host")
            return {"host": host, "outcome": "failed",
                    "stage": swap_stage(record.get("variant"), record.get("stage")),
                    "unreachable": bool(record.get("unreachable")), "reason": text(record.get("reason"))}
    return failure


def swap_rolled_back(result: Mapping[str, Any], server: Any = None, error: Any = None) -> dict:
    """RESULT (a failed host's record) after the base server was relaunched: SERVER its result
    fact (ready, health proved by the wait), or ERROR why the relaunch failed."""
    record = dict(result)
    record["rollback_needed"] = False
    if error:
        record["rolled_back"] = False
        record["server_left"] = SERVER_NOT_RESTORED % text(error)
    else:
        record["rolled_back"] = True
        record["server_left"] = SERVER_RESTORED % num(dig(server, "ready_seconds"), 2)
    return _with_line(record)
