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

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.variant_lines import teardown_record


def pick(experiment: Mapping[str, Any], host: str, index: int, halt: str = "") -> dict:
    """The variant at position INDEX of HOST's list of variants to run (none past its end): `variant`,
    `run` (whether it is launched), `skipped` (its record when a halt keeps it from running, else None)
    and `record` (None: a variant that runs has none until it ends, the rescue's failure, or without
    one its measurement, which close() takes)."""
    todo = list((experiment.get("todo") or {}).get(host) or [])
    variant = None
    if 0 <= index < len(todo):
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


def measured(variant: Mapping[str, Any], runs: Any = None, server: Any = None) -> dict:
    """The record of a variant whose launch and benchmark ended without a failure: ok, with its benchmark
    run (RUNS: the host's benchmark runs by label, the variant's name) and SERVER (the server role's result
    fact). Failed at stage benchmark when RUNS has no run of the variant (nothing measured)."""
    run = (runs or {}).get(variant["name"]) if isinstance(runs, Mapping) else None
    if run is None:
        return {"variant": variant["name"], "outcome": "failed", "stage": "benchmark",
                "reason": "no benchmark run recorded for %s" % variant["name"]}
    return {"variant": variant["name"], "outcome": "ok", "stage": "done", "reason": "", "bench": run, "server": server}


def close(record: Mapping[str, Any] | None, variant: Mapping[str, Any], host: str, teardown: Any = None,
          release: Any = None, halt: str = "", stop_error: str = "", kept: bool = False, runs: Any = None,
          server: Any = None) -> dict:
    """The variant's whole record once it ended and the host's halt after it: RECORD (failed with its
    stage and reason; None when nothing failed: ok with its measurement, from RUNS and SERVER as
    measured() takes them) with the engine, the fingerprint, the host and the teardown (the stop's own
    release when it proved every GPU free, else RELEASE, the check after it)."""
    if record is None:
        record = measured(variant, runs, server)
    evidence = teardown.get("release") if stop_verified(teardown, stop_error) else release
    full = dict(record, engine=variant["engine"], speculative=variant.get("speculative") is not None,
                fingerprint=variant.get("fingerprint"), host=host,
                teardown=teardown_record(evidence, halt, stop_error, kept))
    if kept and full.get("outcome") != "ok":
        halt = "%s failed at stage %s and servers are kept, so the next variants were not launched" % (
            variant["name"], full.get("stage"))
    return {"record": full, "halt": halt}
