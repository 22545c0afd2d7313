# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""experiment_plan and experiment_report through ansible-playbook on the controller: the plan skips
what is recorded and refuses a bad file with its line and key, without a traceback; the report
reads the records and returns the failed gates without failing."""

from __future__ import annotations

import json

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from tests.support.ansible import run_playbook

ENGINE = registry.names()[0]
EXPERIMENT = """\
reference: base
gates: {max_ttft_p99_ms: 1000}
variants:
  - {name: base, engine: %s}
  - {name: big, engine: %s, server: {mem_fraction_static: 0.9}}
""" % (ENGINE, ENGINE)
PLAY = """
- name: Plan, then report
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Plan
      gpufleet.serving.experiment_plan:
        file: "{{ dir }}/exp.yml"
        hosts: [gpu01]
        results_dir: "{{ dir }}/results"
      register: plan

    - name: Report
      gpufleet.serving.experiment_report:
        experiment: "{{ plan }}"
        results_dir: "{{ dir }}/results"
        dest_dir: "{{ dir }}/results/report"
      register: report
      when: with_report

    - name: Hand the results to the test
      ansible.builtin.copy:
        content: "{{ {'plan': plan, 'report': report | default({})} | to_json }}"
        dest: "{{ dir }}/out.json"
        mode: "0644"
"""
# One level of an llm_benchmark result (plugins/modules/llm_benchmark.py RETURN), TTFT p99 above the gate.
LEVEL = {"concurrency": 1, "requests": 8, "completed": 8, "failed": 0, "output_tok_s": 63.6,
         "ttft_ms": {"mean": 700.0, "p50": 700.0, "p90": 1100.0, "p99": 1200.0},
         "tpot_ms": {"mean": 15.7, "p50": 15.7, "p90": 16.0, "p99": 17.0},
         "itl_ms": {"mean": 15.7, "p50": 15.7, "p90": 16.0, "p99": 17.0}, "accept_length": None}


def _run(tmp_path, with_report):
    (tmp_path / "play.yml").write_text(PLAY)
    proc = run_playbook(tmp_path / "play.yml", {"dir": str(tmp_path), "with_report": with_report})
    return proc, json.loads((tmp_path / "out.json").read_text()) if proc.returncode == 0 else None


def _record(plan, name):
    # What the variant's run on gpu01 records: its fingerprint on that host (its settings and the host's).
    fingerprint = plan["host_fingerprints"]["gpu01"][name]
    return {"variant": name, "outcome": "ok", "bench": {"levels": [LEVEL]}, "host": "gpu01",
            "fingerprint": fingerprint, "finished_at": "2026-05-01T10:00:00Z"}


def _save(tmp_path, plan, name):
    path = tmp_path / "results" / "records" / "gpu01" / (store.safe_name(name) + ".json")
    assert str(path) == plan["record_files"]["gpu01"][name]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_record(plan, name)))


def test_plan_skips_what_is_recorded_and_refuses_a_bad_file(tmp_path):
    (tmp_path / "exp.yml").write_text(EXPERIMENT)
    proc, out = _run(tmp_path, False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert out["plan"]["todo"] == {"gpu01": ["base", "big"]} and out["plan"]["changed"] is False
    _save(tmp_path, out["plan"], "base")
    proc, out = _run(tmp_path, False)
    assert out["plan"]["todo"] == {"gpu01": ["big"]} and out["plan"]["recorded"] == {"gpu01": ["base"]}
    assert "gpu01: 1 skipped, recorded with the same settings: base" in out["plan"]["lines"][1]

    (tmp_path / "exp.yml").write_text(EXPERIMENT.replace("mem_fraction_static", "mem_fraction_statik"))
    proc, unused = _run(tmp_path, False)
    assert proc.returncode == 2
    assert "%s:5: variants[1].server.mem_fraction_statik: unknown server option; did you mean " \
           "mem_fraction_static?" % (tmp_path / "exp.yml") in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_report_returns_the_failed_gates_without_failing(tmp_path):
    (tmp_path / "exp.yml").write_text(EXPERIMENT)
    unused, out = _run(tmp_path, False)
    for name in ("base", "big"):
        _save(tmp_path, out["plan"], name)
    proc, out = _run(tmp_path, True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = out["report"]
    assert report["gate_failures"] == [
        "gpu01 %s: max_ttft_p99_ms value 1200.0, limit 1000 (highest TTFT p99 at concurrency 1)" % n
        for n in ("base", "big")]
    assert report["failures"] == []
    assert report["json_path"] == str(tmp_path / "results" / "report" / "experiment.json")
    assert (tmp_path / "results" / "report" / "experiment.md").read_text() == report["markdown"]
