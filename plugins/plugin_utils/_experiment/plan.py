# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a run of an experiment file will do on each host, given what is recorded already.

A variant is skipped when its record has the current fingerprint, outcome ok and a complete
measurement (benchmark levels). It runs again when it was recorded with other settings (`rerun`),
recorded as not completed (a failed or skipped variant is retried, so a crash or a lost host costs
one variant, not the experiment), or recorded ok without a measurement (the report would show
nothing for it).
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import host_fingerprint, server_requests, store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.load import load


def measured(record):
    """Whether RECORD holds a complete measurement: a benchmark result with its levels."""
    bench = record.get("bench")
    return (isinstance(bench, dict) and not bench.get("failed") and isinstance(bench.get("levels"), list)
            and bool(bench["levels"]) and all(isinstance(lv, dict) for lv in bench["levels"]))


def _why_again(record):
    if record.get("outcome") == "ok":
        return "recorded as ok without a benchmark measurement: runs again"
    return "recorded as %s at stage %s: runs again" % (str(record.get("outcome") or "failed").upper(),
                                                       record.get("stage") or "?")


def _host_lines(host, names, done, stale, retry):
    todo = [n for n in names if n not in done]
    runs = ", ".join(n + (" (settings changed since its record: runs again)" if n in stale
                          else " (%s)" % retry[n] if n in retry else "") for n in todo)
    lines = ["%s: %d of %d variants to run%s" % (host, len(todo), len(names), (": " + runs) if todo else "")]
    if done:
        lines.append("%s: %d skipped, recorded with the same settings: %s" % (
            host, len(done), ", ".join("%s (finished %s)" % (n, done[n].get("finished_at") or "?") for n in done)))
    return lines


def plan(path, hosts, results_dir, fresh=False, confirm=False, check_mode=False, resume=True, resolve=None):
    """load()'s dict plus each variant's server_request (server_requests.py), todo,
    recorded, rerun, record_files, lines, results_dir and changed; with RESOLVE (host, server
    requests -> that host's server specs: the server_spec lookup over the host's variables),
    host_fingerprints, each variant's fingerprint on each host (host_fingerprint.py), which its
    record must carry to count (with RESUME only).

    Without RESUME nothing recorded is read or moved: every variant runs and its record replaces the
    earlier one (a preset that compares every time)."""
    experiment = server_requests.add_server_requests(load(path, hosts, confirm=confirm))
    lines, moved = [], None
    if resolve is not None and resume:  # without resume no record is read, so none is compared
        experiment["host_fingerprints"], unread = host_fingerprint.on_hosts(experiment, resolve)
        lines += unread
    if not resume:
        fresh = False
    if fresh and check_mode:
        lines.append("fresh: would move %s aside (check mode: nothing moved)" % store.records_dir(results_dir))
    elif fresh:
        moved = store.start_fresh(results_dir)
        lines.append("fresh: moved the earlier records to %s" % moved if moved
                     else "fresh: no earlier records in %s" % store.records_dir(results_dir))
    # In check mode a fresh start is shown as it would be: nothing recorded.
    found = {"recorded": {}, "stale": {}, "problems": []} if (fresh and check_mode) or not resume \
        else store.scan(results_dir, experiment)
    out = dict(experiment, todo={}, recorded={}, rerun={}, record_files={}, results_dir=str(results_dir))
    for host, names in experiment["assignments"].items():
        same = found["recorded"].get(host, {})
        done = {n: r for n, r in same.items() if r.get("outcome") == "ok" and measured(r)}
        retry = {n: _why_again(r) for n, r in same.items() if n not in done}
        stale = found["stale"].get(host, {})
        out["todo"][host] = [n for n in names if n not in done]
        out["recorded"][host] = [n for n in names if n in done]
        out["rerun"][host] = [n for n in names if n in stale]
        out["record_files"][host] = {n: store.record_file(results_dir, host, n) for n in names}
        lines += _host_lines(host, names, done, stale, retry)
    out["lines"] = lines + found["problems"]
    out["changed"] = bool(moved)
    return out
