# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A host's experiment variant, step by step (roles/_fleet/tasks/experiment_variant.yml): which
variant runs at a position and whether it runs, and its record and the host's halt once it ended.
The YAML runs the steps; these decide.

A halt (a reason, empty while the host goes on) stops a host's later variants: the GPUs were not
verified free after a variant, or a variant failed while servers are kept (the next launch would
tear down a server the record does not describe). Those variants are recorded as skipped, in memory
only: a re-run tries them.
"""

from __future__ import annotations

from typing import Any, Mapping

from ansible_collections.gpufleet.serving.plugins.module_utils._server import group as server_group
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.variant_lines import teardown_record


def pick(experiment: Mapping[str, Any], host: str, index: int, halt: str = "") -> dict:
    """The variant at position INDEX of HOST's list of variants to run (none past its end): `variant`,
    `run` (whether it is launched), `skipped` (its record when a halt keeps it from running, else None)
    and `record` (None: a variant that runs has none until it ends, the rescue's failure, or without
    one its measurement, which close() takes)."""
    # `slots`: the host's list with a stand-by (None) where a variant that spans hosts waits for its other
    # nodes, so every node of a group reaches it at the same position (the play runs them in step).
    todo = list((experiment.get("slots") or experiment.get("todo") or {}).get(host) or [])
    variant = None
    if 0 <= index < len(todo) and todo[index] is not None:
        variant = next(v for v in experiment["variants"] if v["name"] == todo[index])
        # Its fingerprint on this host (its settings and the host's), which its record carries.
        variant = dict(variant, fingerprint=store.current_fingerprint(experiment, host, variant["name"]))
    skipped = None
    if variant is not None and halt:
        skipped = {"variant": variant["name"], "engine": variant["engine"],
                   "speculative": variant.get("speculative") is not None, "outcome": "skipped", "stage": "skipped",
                   "reason": halt}
    return {"variant": variant, "run": variant is not None and not halt, "skipped": skipped, "record": None}


def stop_verified(teardown: Any, stop_error: str = "") -> bool:
    """Whether the stop's own release proved every GPU free: the stop ended without error and its
    release (gpu_release with its NVML check) covered every GPU (TEARDOWN: the server role's
    PREFIXteardown fact)."""
    return not stop_error and isinstance(teardown, Mapping) and bool(teardown.get("all_gpus"))


def close(record: Mapping[str, Any] | None, variant: Mapping[str, Any], host: str, teardown: Any = None,
          release: Any = None, halt: str = "", stop_error: str = "", kept: bool = False, runs: Any = None,
          server: Any = None) -> dict:
    """The variant's whole record once it ended and the host's halt after it: RECORD (failed with its
    stage and reason; None when nothing failed: ok with its measurement, from RUNS and SERVER as
    measured() takes them) with the engine, the fingerprint, the host and the teardown (the stop's own
    release when it proved every GPU free, else RELEASE, the check after it)."""
    if record is None:
        record = measured(variant, runs, server, host)
    evidence = teardown.get("release") if stop_verified(teardown, stop_error) else release
    full = dict(record, engine=variant["engine"], speculative=variant.get("speculative") is not None,
                fingerprint=variant.get("fingerprint"), host=host,
                teardown=teardown_record(evidence, halt, stop_error, kept))
    if kept and full.get("outcome") != "ok":
        halt = "%s failed at stage %s and servers are kept, so the next variants were not launched" % (
            variant["name"], full.get("stage"))
    return {"record": full, "halt": halt}


def measured(variant: Mapping[str, Any], runs: Any = None, server: Any = None, host: str = "") -> dict:
    """The record of a variant whose launch and benchmark ended without a failure: ok, with its benchmark run
    (RUNS: the host's benchmark runs by label, the variant's name), SERVER (the server role's result fact) and
    its topology (`nodes`, `nnodes` and the TP/PP/DP/EP sizes, _server/group.py topology). A node of rank >= 1
    of a server that spans hosts measures nothing (only rank 0 serves the API): its record says where it was
    measured (`measured_at`). Failed at stage benchmark when RUNS has no run of the variant (nothing measured)."""
    server = dict(server) if isinstance(server, Mapping) else {}
    group = server.get("group") if isinstance(server.get("group"), Mapping) else None
    nodes = list(group["nodes"]) if group else [host]
    settings = dict(variant.get("server") or {})
    settings.update({key: server[key] for key in ("tp_size", "extra_args") if server.get(key) is not None})
    topology = server_group.topology(variant["engine"], dict(settings, nodes=nodes))
    record = {"variant": variant["name"], "outcome": "ok", "stage": "done", "reason": "", "server": server,
              "topology": topology}
    if group and group.get("rank"):
        return dict(record, bench={}, measured_at=nodes[0])
    run = (runs or {}).get(variant["name"]) if isinstance(runs, Mapping) else None
    if run is None:
        return {"variant": variant["name"], "outcome": "failed", "stage": "benchmark",
                "reason": "no benchmark run recorded for %s" % variant["name"]}
    return dict(record, bench=run)


def measured_here(server: Mapping[str, Any]) -> bool:
    """Whether this host measures its server: one host's, or rank 0 of a server that spans hosts."""
    group = server.get("group") if isinstance(server.get("group"), Mapping) else None
    return not group or not group.get("rank")


def node_result(server: Mapping[str, Any], host: str) -> dict:
    """What a playbook's per-host result adds on a node of rank >= 1 of a server that spans hosts: `at_rank_0`
    (the node that measured it: the report leaves this host out) and its `line`; {} where this host measures."""
    if measured_here(server):
        return {}
    rank_0 = server["group"]["nodes"][0]
    return {"at_rank_0": rank_0, "line": "%s: node of the server at %s (rank 0), measured there" % (host, rank_0)}
