# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-host outcomes of the fleet playbooks: the decisions and the lines they print.

Controller-side only (filter plugins in plugins/filter/fleet.py call these). Every function
takes plain data (registered results, facts) and returns plain data; nothing here reads
task names.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import gates as _gates
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import preset as _preset
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl

DASH = "-"

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

NO_RESULT = "NO RESULT, the host left the play before recording an outcome (see above)"

RESET_ROW = "%-14s %-11s %8s %9s %8s  %s"
RESET_HEADER = RESET_ROW % ("host", "outcome", "killed", "GPUs free", "seconds",
                            "reason / protected holders (SIGKILL: processes that needed it)")


# The engines the playbooks drive (their `engine` variable, default: the registry's first).
# Each has server variables NAME_server_* and facts NAME_server_result / NAME_server_teardown,
# set by its public role gpufleet.serving.NAME_server or, for an engine without one, by the
# internal _server role straight from those variables; its default port is the engine's
# (Engine.default_port).
DEFAULT_ENGINE = _registry.DEFAULT


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip() in ("", "None"))


def num(value: Any, digits: int = 1) -> str:
    """VALUE with DIGITS decimals, or "-" when there is none."""
    return DASH if _absent(value) else "%.*f" % (digits, float(value))


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _succeeded(result: Any) -> bool:
    """A registered result of a task that ran and did not fail."""
    return isinstance(result, Mapping) and bool(result) and not result.get("failed") \
        and not result.get("unreachable") and not result.get("skipped")


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
    if stage == "eagle" and not _succeeded(drafter_check):
        return SERVER_BASE
    if stage in ("eagle_benchmark", "gates") and isinstance(server, Mapping) and server.get("speculative"):
        return SERVER_EAGLE
    return SERVER_MAYBE_NONE


def failure_reason(failed_result: Any, failed_task: Any = None, ping: Any = None) -> str:
    """Why a host failed: "unreachable: MSG" when it stops answering (PING, the rescue's
    ping result), else "TASK NAME: MSG" of the failed task."""
    if isinstance(ping, Mapping) and ping.get("unreachable"):
        return "unreachable: " + _text(ping.get("msg", ""))
    name = failed_task.get("name") if isinstance(failed_task, Mapping) else None
    msg = failed_result.get("msg", "failed") if isinstance(failed_result, Mapping) else "failed"
    return "%s: %s" % (name or "?", _text(msg))


def swap_line(result: Mapping[str, Any]) -> str:
    """The one line swap_to_eagle.yml (and swap_to_base.yml, for a failure) prints for a host."""
    host = result["host"]
    if result.get("outcome") != "ok":
        line = "%s: %s at stage %s: %s" % (host, str(result.get("outcome", "failed")).upper(),
                                           result.get("stage", "start"), result.get("reason", ""))
        if result.get("server_left") is not None:
            line += "; server left: %s" % result["server_left"]
        return line
    killed = result.get("killed")
    base_ready = result.get("base_ready_seconds")
    return (
        "%s: ok, single-stream %s -> %s tok/s, peak %s -> %s tok/s, accept length %s; "
        "teardown %s s (%s processes signalled after the stop); EAGLE-3 ready in %s s, base server %s"
        % (host, num(result.get("baseline_tok_s")), num(result.get("eagle_tok_s")),
           num(result.get("baseline_peak_tok_s")), num(result.get("eagle_peak_tok_s")),
           num(result.get("accept_length"), 2), num(result.get("release_seconds"), 2),
           DASH if _absent(killed) else killed, num(result.get("eagle_ready_seconds"), 2),
           "kept running" if _absent(base_ready) else "ready in %s s" % num(base_ready, 2))
        + wl.random_suffix(result.get("workload"), result.get("accept_length")))


def _with_line(record: dict) -> dict:
    record["line"] = swap_line(record)
    return record


def base_line(host: str, server: Mapping[str, Any], teardown: Any = None, bench: Any = None) -> str:
    """swap_to_base.yml's line for a host whose base server runs. SERVER is
    the server's result fact (fleet_server), TEARDOWN its teardown fact (None when there was none),
    BENCH the llm_benchmark result (None without swap_benchmark)."""
    relaunched = bool(server.get("relaunched"))
    line = "%s: ok, base server at %s %s" % (
        host, server.get("base_url"),
        "relaunched, ready in %s s" % num(server.get("ready_seconds"), 2) if relaunched
        else "kept running (already the base server)")
    if relaunched and isinstance(teardown, Mapping) and teardown:
        line += "; the previous server's teardown took %s s" % num(teardown.get("release_seconds"), 2)
    if isinstance(bench, Mapping) and bench.get("summary"):
        line += "; peak %s tok/s" % num(bench["summary"].get("peak_tok_s"))
    return line


def launch_line(host: str, server: Mapping[str, Any]) -> str:
    """launch.yml's line for a host: the server's URL, relaunched (seconds until ready) or kept."""
    return "%s: %s %s" % (host, server.get("base_url"),
                          "relaunched, ready after %s s" % num(server.get("ready_seconds"), 2)
                          if server.get("relaunched") else "kept running (healthy, same configuration)")


def teardown_line(host: str, teardown: Mapping[str, Any], instance: str) -> str:
    """teardown.yml's line for a host: whether the server ran, the release's seconds and the
    processes it signalled (with their titles when TEARDOWN names them: vllm_server's
    killed_titles)."""
    line = ("%s: stopped %s (was running: %s); GPUs verified free after %s s, %s processes signalled by the release"
            % (host, instance, teardown.get("stopped"), num(teardown.get("release_seconds"), 2),
               teardown.get("killed")))
    titles = [_short_command(str(t)) for t in teardown.get("killed_titles") or []]
    if titles:
        # vllm_server names them: e.g. a VLLM::EngineCore left behind by a killed API server.
        line += " (%s)" % ", ".join(titles)
    return line


def bench_line(host: str, url: str, run: Any = None, error: Any = None) -> str:
    """benchmark.yml's line for a host: its figures (RUN, the llm_benchmark result) or,
    with ERROR (the failed task's message), the failure. An acceptance length measured on
    random prompts carries the reports' warning."""
    if error is not None or not isinstance(run, Mapping):
        return "%s: FAILED, %s: %s" % (host, url, _text(error if error is not None else "failed"))
    summary = run.get("summary") or {}
    return ("%s: ok, %s: single-stream %s tok/s, peak %s tok/s at %s, accept length %s, %s failed requests"
            % (host, url, num(summary.get("single_stream_tok_s")), num(summary.get("peak_tok_s")),
               summary.get("peak_concurrency"), num(summary.get("accept_length"), 2),
               summary.get("failed"))
            + wl.random_suffix(wl.describe(run), summary.get("accept_length")))


def engine_settings(name: Any, host: Any = "", port: Any = "", instance: Any = "") -> dict:
    """What the playbooks need to know of the engine NAME (a registry name; empty: the default):
    its title, tested version, server role (and whether it is the engine's own), the names of that role's facts, the report labels, and with the
    server's HOST, PORT and INSTANCE variables (empty: the role's defaults) its URL and
    instance name. ValueError, naming the choices, for any other engine."""
    name = _text(name) or DEFAULT_ENGINE
    spec = _registry.find(name)
    if spec is None:
        others = ", ".join("-e engine=%s runs %s" % (e.name, e.title) for e in _registry.engines()
                           if e.name != DEFAULT_ENGINE)
        raise ValueError("engine must be one of %s, not %r (%s; leave it out for %s)"
                         % (", ".join(sorted(_registry.names())), name, others,
                            _registry.get(DEFAULT_ENGINE).title))
    host = "127.0.0.1" if _absent(host) else _text(host)
    port = spec.default_port if _absent(port) else int(port)
    prefix = name + "_server_"
    return {
        "name": name, "title": spec.title, "tested_version": spec.tested_version,
        # An engine without a public role runs the internal one straight from its variables.
        "role": "gpufleet.serving." + (prefix[:-1] if spec.server_role else "_server"),
        "own_role": spec.server_role, "default_port": spec.default_port,
        "vars_prefix": prefix, "result_fact": prefix + "result", "teardown_fact": prefix + "teardown",
        "label": name, "eagle_label": name + "+eagle3",
        "url": "http://%s:%d" % ("[%s]" % host if ":" in host else host, port),
        "instance": "%s-%d" % (name, port) if _absent(instance) else _text(instance),
    }


def halt_batch(results: Iterable[Any], max_fail_percentage: Any = 100) -> bool:
    """Whether a new batch may not start: more than MAX_FAIL_PERCENTAGE of the hosts done so
    far (RESULTS with an outcome other than pending / not_started; None entries ignored) failed."""
    done = [r for r in results if isinstance(r, Mapping)
            and r.get("outcome") not in (None, "pending", "not_started")]
    if not done:
        return False
    failed = [r for r in done if r.get("outcome") == "failed"]
    return 100.0 * len(failed) / len(done) > float(100 if max_fail_percentage is None else max_fail_percentage)


def swap_start(results: Iterable[Any], host: str, max_fail_percentage: Any = 100) -> dict:
    """swap_to_eagle.yml's first record of HOST: pending, or not_started (with its line) when
    more than MAX_FAIL_PERCENTAGE of the hosts done so far (RESULTS) failed (see halt_batch)."""
    if halt_batch(results, max_fail_percentage):
        return _with_line({"host": host, "outcome": "not_started", "stage": "start",
                           "reason": "more than %s%% of the hosts done so far failed" % max_fail_percentage})
    return {"host": host, "outcome": "pending", "stage": "start", "reason": ""}


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def swap_record(runs: Mapping[str, Any], host: str, base_server: Any = None, server: Any = None,
                teardown: Any = None, gates: Any = None) -> dict:
    """swap_to_eagle.yml's record of a host that completed, with its line: RUNS holds the llm_benchmark
    results (`baseline`, absent without swap_baseline, and `candidate`), BASE_SERVER the
    server's result fact (fleet_server) of the baseline step, SERVER the EAGLE-3 server's, TEARDOWN
    its teardown fact (None when the base server was not torn down)."""
    return _with_line({
        "host": host, "outcome": "ok", "stage": "done", "reason": "",
        "baseline_tok_s": _get(runs, "baseline", "summary", "single_stream_tok_s"),
        "baseline_peak_tok_s": _get(runs, "baseline", "summary", "peak_tok_s"),
        "eagle_tok_s": _get(runs, "candidate", "summary", "single_stream_tok_s"),
        "eagle_peak_tok_s": _get(runs, "candidate", "summary", "peak_tok_s"),
        "accept_length": _get(runs, "candidate", "summary", "accept_length"),
        "base_ready_seconds": _get(base_server, "ready_seconds"),
        "eagle_ready_seconds": _get(server, "ready_seconds"),
        "release_seconds": _get(teardown, "release_seconds"),
        "killed": _get(teardown, "killed"),
        "workload": wl.describe(_get(runs, "candidate")),
        "gates": list(gates or []),
    })


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
    candidate = {"outcome": "ok", "speculative": True, "bench": _get(runs, "candidate")}
    baseline = {"outcome": "ok", "bench": _get(runs, "baseline")}
    out = []
    for entry in _gates.evaluate(candidate, baseline, dict(gates), reference_name="the base server"):
        entry = dict(entry)
        entry["line"] = _gates.entry_text(entry)
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
                    "unreachable": bool(record.get("unreachable")), "reason": _text(record.get("reason"))}
    return failure


def swap_rolled_back(result: Mapping[str, Any], server: Any = None, error: Any = None) -> dict:
    """RESULT (a failed host's record) after the base server was relaunched: SERVER its result
    fact (ready, health proved by the wait), or ERROR why the relaunch failed."""
    record = dict(result)
    record["rollback_needed"] = False
    if error:
        record["rolled_back"] = False
        record["server_left"] = SERVER_NOT_RESTORED % _text(error)
    else:
        record["rolled_back"] = True
        record["server_left"] = SERVER_RESTORED % num(_get(server, "ready_seconds"), 2)
    return _with_line(record)


def report_lines(results: Iterable[Mapping[str, Any]], missing: Iterable[str] = (),
                 report: Any = None, summary_file: str | None = None) -> list:
    """The controller's closing lines: where the report is (with REPORT, the benchmark_report
    result, or None to leave the line out), the summary file, then one line per host (each
    result's `line`, by host) and one per host without a result (MISSING)."""
    out = []
    if report is not None:
        paths = []
        if isinstance(report, Mapping):
            paths = [report.get(key) for key in ("json_path", "markdown_path", "plot_path")]
        out.append("report: " + (", ".join(p for p in paths if p) or "none (no host completed)"))
    if summary_file:
        out.append("summary: %s" % summary_file)
    out.extend(r.get("line", "?") for r in sorted(results, key=lambda r: r["host"]))
    out.extend("%s: %s" % (host, NO_RESULT) for host in missing)
    return out


def not_ok(results: Iterable[Mapping[str, Any]], missing: Iterable[str] = (), ok: str = "ok") -> list:
    """Hosts whose outcome is not OK (in play order), then the MISSING ones."""
    return [r["host"] for r in results if r.get("outcome") != ok] + list(missing)


def _cmdlines(items: Any) -> list:
    return [(i.get("cmdline", "?") if isinstance(i, Mapping) else "?") for i in (items or [])]


def _truncate(text: str, length: int = 80) -> str:
    # Jinja's truncate(80): cut at a word boundary, leeway 5, "..." appended.
    if len(text) <= length + 5:
        return text
    cut = text[:length - 3].rsplit(" ", 1)[0]
    return cut + "..."


def _short_command(text: str) -> str:
    # The interpreter's directory says nothing about what was killed and would push the
    # words that do (e.g. multiprocessing.resource_tracker) past the cut.
    head, sep, rest = text.partition(" ")
    if head.startswith("/"):
        head = head.rsplit("/", 1)[1] or head
    return _truncate(head + sep + rest)


def reset_summary(release: Any, host: str, failure: Any = None, unreachable: bool = False) -> dict:
    """reset.yml's record of a host. RELEASE is gpu_release's result; with FAILURE (the
    rescue's ansible_failed_result) the host is dirty, or unreachable when UNREACHABLE or
    FAILURE says so. The release's figures come from FAILURE when it is gpu_release's own."""
    if failure is not None:
        release = failure if isinstance(failure, Mapping) and "gpus" in failure else {}
    release = release if isinstance(release, Mapping) else {}
    killed = release.get("killed") or []
    gpus = release.get("gpus") or []
    out = {
        "host": host,
        "killed": len(killed),
        "sigkilled": len([k for k in killed if "SIGKILL" in (k.get("signals") or [])]),
        "killed_commands": [_short_command(str(c)) for c in _cmdlines(killed)],
        "gpus_selected": len(gpus),
        "gpus_free": len([g for g in gpus if g.get("free")]),
        "protected_holders": _cmdlines(release.get("protected_holders")),
        "seconds": release.get("elapsed"),
    }
    if failure is None:
        out.update(outcome="clean", reason="")
        return out
    lost = unreachable or (isinstance(failure, Mapping) and bool(failure.get("unreachable")))
    msg = failure.get("msg", "failed") if isinstance(failure, Mapping) else "failed"
    out.update(outcome="unreachable" if lost else "dirty", reason=_text(msg),
               failed_to_kill=_cmdlines(release.get("failed_to_kill")),
               gpus_used=[g.get("index") for g in gpus if "free" in g and not g["free"]])
    return out


def reset_table(results: Iterable[Mapping[str, Any]], missing: Iterable[str] = ()) -> list:
    """reset.yml's fixed-width table: a header, one row per host (by host), one per host
    without a result."""
    out = [RESET_HEADER]
    for r in sorted(results, key=lambda r: r["host"]):
        if r.get("outcome") != "clean":
            detail = r.get("reason", "")
        else:
            sigkilled = int(r.get("sigkilled") or 0)
            detail = ("SIGKILL: %d; " % sigkilled if sigkilled > 0 else "") + (
                "protected: " + ", ".join(r["protected_holders"]) if r.get("protected_holders") else "")
        selected = int(r.get("gpus_selected") or 0)
        out.append(RESET_ROW % (r["host"], r.get("outcome"), r.get("killed"),
                                "%s/%s" % (r.get("gpus_free"), selected) if selected > 0 else DASH,
                                num(r.get("seconds"), 2), detail))
    for host in missing:
        out.append(RESET_ROW % (host, "no result", DASH, DASH, DASH, "the host left the play (see above)"))
    return out
