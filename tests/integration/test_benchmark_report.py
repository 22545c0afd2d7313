# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""benchmark_report through ansible-playbook: two hosts benchmark a baseline and a
candidate test server with llm_benchmark, then the controller writes the report."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import textwrap

import pytest

from tests.support import paths

PY = paths.PYTHON
REPO = pathlib.Path(paths.REPO)

PLAYBOOK = """
- name: Benchmark baseline and candidate on every host
  hosts: gpus
  gather_facts: false
  tasks:
    - name: Baseline
      gpufleet.serving.llm_benchmark:
        base_url: "{{ baseline_url }}"
        levels: [1, 4]
        input_len: 8
        output_len: 18
      register: bench_base

    - name: Candidate
      gpufleet.serving.llm_benchmark:
        base_url: "{{ candidate_url }}"
        levels: [1, 4]
        input_len: 8
        output_len: 18
      register: bench_cand

    - name: Keep both runs as one fact
      ansible.builtin.set_fact:
        bench_pair:
          baseline: "{{ bench_base }}"
          candidate: "{{ bench_cand }}"

    - name: Report on the controller
      gpufleet.serving.benchmark_report:
        results: >-
          {{ dict(ansible_play_hosts_all
                  | zip(ansible_play_hosts_all | map('extract', hostvars)
                        | map(attribute='bench_pair', default={}))) }}
        dest_dir: "{{ report_dir }}"
        title: Test fleet
        baseline_label: plain
        candidate_label: eagle3
      run_once: true
      register: report

    - name: Hand the result to the test
      ansible.builtin.copy:
        content: "{{ {'report': report, 'pairs': {'gpu01': hostvars['gpu01'].bench_pair,
                      'gpu02': hostvars['gpu02'].bench_pair}} | to_json }}"
        dest: "{{ report_dir }}/../task_result.json"
        mode: "0644"
      delegate_to: localhost
      run_once: true
"""


def test_report_from_a_playbook(server, tmp_path):
    base = server("--rate", "200", "--ttft", "0.01")
    cand = server("--rate", "300", "--ttft", "0.01", "--tokens-per-chunk", "3", "--spec")
    (tmp_path / "inventory.yml").write_text(textwrap.dedent("""
        gpus:
          hosts:
            gpu01: {}
            gpu02: {}
          vars:
            ansible_connection: local
            ansible_python_interpreter: %s
    """ % PY))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    report_dir = tmp_path / "report"
    cmd = [os.path.join(paths.VENV_BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
           str(tmp_path / "play.yml"), "-e", json.dumps({"baseline_url": base.url, "candidate_url": cand.url,
                                                         "report_dir": str(report_dir)})]
    out = subprocess.run(cmd, cwd=str(REPO), capture_output=True, text=True, timeout=150,
                         env=dict(os.environ, ANSIBLE_NOCOLOR="1"), check=False)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]

    got = json.loads((tmp_path / "task_result.json").read_text())
    task, pairs = got["report"], got["pairs"]
    assert task["changed"] is True
    assert task["json_path"] == str(report_dir / "benchmark.json")
    rep = json.loads((report_dir / "benchmark.json").read_text())
    assert sorted(rep["hosts"]) == ["gpu01", "gpu02"]

    def tps(host, side, c):
        return next(lv["output_tok_s"] for lv in pairs[host][side]["levels"] if lv["concurrency"] == c)

    for host in ("gpu01", "gpu02"):
        ratios = {r["concurrency"]: r["ratio"] for r in rep["hosts"][host]["ratio"]}
        for c in (1, 4):
            assert ratios[c] == pytest.approx(tps(host, "candidate", c) / tps(host, "baseline", c), abs=1e-3)
        assert rep["hosts"][host]["candidate"]["accept_length"] == 3.0
        assert rep["hosts"][host]["baseline"]["accept_length"] is None
    for c in (1, 4):
        fleet = next(lv for lv in rep["fleet"]["baseline"]["levels"] if lv["concurrency"] == c)
        assert fleet["output_tok_s"] == pytest.approx(tps("gpu01", "baseline", c) + tps("gpu02", "baseline", c),
                                                      abs=1e-2)
    # The candidate streams 1.5x faster per token: its ratio is well above 1.
    assert all(r["ratio"] > 1.2 for r in rep["fleet"]["ratio"])

    md = (report_dir / "benchmark.md").read_text()
    assert md == task["markdown"]
    fleet_c4 = rep["fleet"]["ratio"][-1]
    row = "| 4 | %.1f | %.1f | %.2fx |" % (fleet_c4["baseline_tok_s"], fleet_c4["candidate_tok_s"], fleet_c4["ratio"])
    assert row in md
    g1 = rep["hosts"]["gpu01"]["baseline"]
    assert "| gpu01 | plain | %.1f | %.1f | 4 |" % (g1["single_stream_tok_s"], g1["peak_tok_s"]) in md

    png = (report_dir / "benchmark.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000
    assert task["plot_path"] == str(report_dir / "benchmark.png")
    page = (report_dir / "benchmark.html").read_text()
    assert task["html_path"] == str(report_dir / "benchmark.html") and "data:image/png;base64," in page
