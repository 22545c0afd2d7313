# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Experiments and variant records for the _experiment tests.

A record is what the experiment playbook writes per host and variant: _fleet's variant record
(variant, outcome, stage, reason, bench) plus fingerprint, host and finished_at. Its `bench` has
the fields of llm_benchmark's RETURN (plugins/modules/llm_benchmark.py: levels[].concurrency,
requests, completed, failed, output_tok_s, ttft_ms/tpot_ms/itl_ms with mean, p50, p90, p99,
accept_length, accept_source), with the seed's Kimi-K2.5 figures where it has them.
"""

from __future__ import annotations

import json
import pathlib
import textwrap
import types

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import load as ld
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store

SG, VL = registry.names()[0], registry.names()[1]

EXPERIMENT = """\
reference: base
spread: %(spread)s
benchmark: {levels: [1, 64]}
gates:
  max_failed_requests: 0
  max_ttft_p99_ms: 2000
  min_speedup: {levels: [1], value: 1.2}
variants:
  - {name: base, engine: %(sg)s, server: {tp_size: 8}}
  - name: eagle/3
    engine: %(sg)s
    speculative: {draft_model_path: /d, num_steps: 3}
    gates: {min_acceptance_length: 2.0}
  - {name: other, engine: %(vl)s}
"""


def _ms(p50, p99):
    return {"mean": p50, "p50": p50, "p90": (p50 + p99) / 2, "p99": p99}


def level(conc, tok_s, ttft_p99=900.0, tpot_p99=30.0, failed=0, accept=None):
    return {"concurrency": conc, "requests": 64, "completed": 64 - failed, "failed": failed,
            "output_tok_s": tok_s, "ttft_ms": _ms(ttft_p99 / 2, ttft_p99), "tpot_ms": _ms(tpot_p99 / 2, tpot_p99),
            "itl_ms": _ms(tpot_p99 / 2, tpot_p99), "accept_length": accept,
            "accept_source": "metrics" if accept is not None else None}


def record(exp, host, name, *levels, outcome="ok", **more):
    variant = next(v for v in exp["variants"] if v["name"] == name)
    out = {"variant": name, "outcome": outcome, "fingerprint": variant["fingerprint"], "host": host,
           "finished_at": "2026-05-01T10:00:00Z"}
    if levels:
        out["bench"] = {"changed": False, "levels": list(levels)}
    out.update(more)
    return out


def save(results_dir, rec):
    """Write REC where the playbook would; its path."""
    path = pathlib.Path(store.record_file(results_dir, rec["host"], rec["variant"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


@pytest.fixture
def kit():
    """level(), record() and save() for the tests."""
    return types.SimpleNamespace(level=level, record=record, save=save)


@pytest.fixture
def experiment(tmp_path):
    """experiment(spread=False, hosts=("h1",)) -> the loaded experiment of EXPERIMENT."""
    def make(spread=False, hosts=("h1",)):
        path = tmp_path / "exp.experiment.yml"
        path.write_text(textwrap.dedent(EXPERIMENT % {"spread": str(spread).lower(), "sg": SG, "vl": VL}))
        return ld.load(path, list(hosts))
    return make
