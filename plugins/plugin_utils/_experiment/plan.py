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

import uuid

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


def slots(experiment, todo):
    """{host: [variant name, or None to stand by]}: TODO with the variants that span hosts (a server whose `nodes`
    are two hosts or more) first, at the same position on every one of their nodes, then the others. The
    play's hosts run their variants side by side, each at its own pace (Ansible keeps them in step only
    while they run the same tasks): a group's nodes launch together only while they have run the same
    variants before it, so the groups come first, and a node waits for the group's other nodes in a
    stand-by slot (it runs nothing; its GPUs were proven free by the clean start or its last teardown)."""
    spans = [v["name"] for v in experiment["variants"] if len(v["server"].get("nodes") or []) > 1]
    order = spans + [v["name"] for v in experiment["variants"] if v["name"] not in spans]
    out = {h: [] for h in todo}
    for name in order:
        hosts = [h for h in todo if name in todo[h]]
        if name in spans and hosts:
            width = max(len(out[h]) for h in hosts)
            for host in hosts:
                out[host] += [None] * (width - len(out[host]))
        for host in hosts:
            out[host].append(name)
    return out


def _group_done(experiment, done_by_host):
    """DONE_BY_HOST with each server that spans hosts done on every node exactly when it is done at rank 0, the
    node that measures it (its record's topology names the nodes; the others' records only say where it was
    measured), whether the variant set the nodes or the inventory did: a re-run runs it on all its nodes or none."""
    out = {h: {n: r for n, r in d.items() if not r.get("measured_at")} for h, d in done_by_host.items()}
    for variant in experiment["variants"]:
        name = variant["name"]
        for host in list(out):
            nodes = ((out[host].get(name) or {}).get("topology") or {}).get("nodes") or []
            if len(nodes) < 2 or nodes[0] != host:
                continue
            for node in nodes[1:]:
                if node in out and name in experiment["assignments"].get(node, []):
                    out[node][name] = out[host][name]
    return out


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
    done_by_host = _group_done(experiment, {
        host: {n: r for n, r in found["recorded"].get(host, {}).items()
               if r.get("outcome") == "ok" and (measured(r) or r.get("measured_at"))}
        for host in experiment["assignments"]})
    for host, names in experiment["assignments"].items():
        same = found["recorded"].get(host, {})
        done = done_by_host[host]
        retry = {n: _why_again(r) for n, r in same.items() if n not in done}
        stale = found["stale"].get(host, {})
        out["todo"][host] = [n for n in names if n not in done]
        out["recorded"][host] = [n for n in names if n in done]
        out["rerun"][host] = [n for n in names if n in stale]
        out["record_files"][host] = {n: store.record_file(results_dir, host, n) for n in names}
        lines += _host_lines(host, names, done, stale, retry)
    out["slots"] = slots(experiment, out["todo"])
    # This run, for the group_barrier markers of variants that span hosts (an earlier run's never count).
    out["run"] = uuid.uuid4().hex
    out["lines"] = lines + found["problems"]
    out["changed"] = bool(moved)
    return out
