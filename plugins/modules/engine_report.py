#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# This file holds the documentation only; the work is done by the action plugin
# plugins/action/engine_report.py on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: engine_report
short_description: Compare engine variants (SGLang, vLLM, each with or without EAGLE-3) in one report
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin; nothing is sent to a remote host).
  - Builds the report of C(playbooks/compare_engines.yml) from each host's variant records and
    writes C(<basename>.json), C(<basename>.md), C(<basename>.png) and C(<basename>.html) to O(dest_dir).
  - "Per host and variant: the outcome (V(ok), V(failed) with its stage and reason, or V(skipped)),
    single-stream tok/s (at concurrency 1), peak tok/s and its concurrency, TTFT p50 at 1 and at the peak,
    TPOT p50 at 1 and at the peak, ITL p50 at 1, the acceptance length (none for a base variant),
    and how many GPUs NVML showed free after the variant's teardown. The fleet row of a variant
    sums tok/s over the hosts that measured it, at each concurrency."
  - "Ratios against O(reference) on the same host: single-stream = variant / reference single-stream
    tok/s; peak = variant / reference peak tok/s (each at its own peak concurrency); TPOT = variant /
    reference TPOT p50 at concurrency 1 (below 1 is faster). A ratio is null when either side has no
    figure; a fleet ratio also when the two variants were not measured on the same hosts."
  - The figures of one variant are those of M(gpufleet.serving.benchmark_report) (the same code
    reads the M(gpufleet.serving.llm_benchmark) levels); the Markdown adds the fleet's tok/s by
    concurrency per variant and, per host, every figure of every level.
  - The PNG's first panel is the throughput-interactivity trade-off, output tok/s per GPU
    against tok/s per user (1000 / TPOT p50), a point per measured level, the Pareto frontier
    dashed; a variant's GPUs are those its teardown released (per server when a server was kept).
    Then output tok/s, TTFT and TPOT p50 (filled) / p99 (hollow) against concurrency, markers at
    the measured levels only, with the 95% interval as a bar where the benchmark ran repeats. A
    colour per variant in every panel, bars included (Okabe-Ito, colour-blind safe), a marker per
    host, one legend right of the panels (defined in docs/benchmark.md, Report plot). It
    needs matplotlib on the controller; without it no PNG is written and the result and the
    Markdown say so.
  - C(<basename>.html) holds the Markdown's every section and the plot in one self-contained file
    (inline CSS, the PNG as a data URI, no network access) that opens in any browser.
  - Files are written only where their content differs, so the same records give C(changed=false).
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.controller_action
  - gpufleet.serving.attributes.report_writer
options:
  records:
    description:
      - "Per host, the list of its variant records in the order run: C(host -> [record, ...]), as the
        C(gpufleet.serving._fleet) role's C(experiment.yml) entry point leaves them in the fact
        C(fleet_variant_records)."
      - "A record: C(variant) (V(sglang), V(vllm), V(sglang+eagle3) or V(vllm+eagle3)), C(outcome)
        (V(ok), V(failed), V(skipped)), C(stage) and C(reason) (when not ok), C(bench) (the registered
        M(gpufleet.serving.llm_benchmark) result), C(server) (the role's C(sglang_server_result) or
        C(vllm_server_result)) and C(teardown) (C(gpus_selected), C(gpus_free), C(gpus_used),
        C(killed), C(seconds) of the verified release after the variant). A record may name its own C(engine)
        and C(speculative) (true or false); then its C(variant) may be any name (M(gpufleet.serving.experiment_report)'s are)."
      - An V(ok) record without benchmark levels counts as failed, with a note.
    type: dict
    required: true
  dest_dir:
    description:
      - Directory on the controller for the files; created when missing.
    type: path
    required: true
  basename:
    description:
      - File name stem of the three files.
    type: str
    default: compare
  title:
    description:
      - Title of the Markdown and the plot.
    type: str
    default: Engine comparison
  reference:
    description:
      - The variant the ratios divide by. It must be one of the variants.
    type: str
    default: sglang
  variants:
    description:
      - Order of the variants in the tables and the plot; variants found in O(records) but not
        listed here follow in the order run. Empty for the order run.
    type: list
    elements: str
    default: []
seealso:
  - module: gpufleet.serving.benchmark_report
  - module: gpufleet.serving.llm_benchmark
"""

EXAMPLES = r"""
# Each host ran its variants with roles/_fleet experiment.yml (compare_engines.yml does).
- name: Write the comparison on the controller
  gpufleet.serving.engine_report:
    records: >-
      {{ dict(ansible_play_hosts_all
              | zip(ansible_play_hosts_all | map('extract', hostvars)
                    | map(attribute='fleet_variant_records', default=[]))) }}
    dest_dir: "{{ playbook_dir }}/reports/compare_engines"
    title: Kimi-K2.5 INT4 TP8, SGLang vs vLLM
    variants: [sglang, vllm, sglang+eagle3, vllm+eagle3]
  run_once: true
  delegate_to: localhost
  register: compare

- name: Show the table
  ansible.builtin.debug:
    msg: "{{ compare.markdown.splitlines() }}"
  run_once: true
"""

RETURN = r"""
json_path:
  description: The JSON report on the controller.
  returned: success
  type: str
  sample: /srv/reports/compare_engines/compare.json
markdown_path:
  description: The Markdown report on the controller.
  returned: success
  type: str
  sample: /srv/reports/compare_engines/compare.md
plot_path:
  description: The PNG plot on the controller; null when matplotlib is missing.
  returned: success
  type: str
  sample: /srv/reports/compare_engines/compare.png
html_path:
  description: The self-contained HTML report (the Markdown's sections and the plot in one file) on the controller.
  returned: success
  type: str
  sample: /srv/reports/compare_engines/compare.html
markdown:
  description: The Markdown text.
  returned: success
  type: str
lines:
  description: One line per host and variant, in the order run (outcome, tok/s and ratios, GPUs free after the teardown).
  returned: success
  type: list
  elements: str
  sample: ["gpu01 vllm: ok, single-stream 82.5 tok/s (1.30x), peak 1536.0 tok/s (0.65x), accept length -; GPUs free after teardown: 8/8"]
failures:
  description: "C(HOST VARIANT: FAILED|SKIPPED at stage STAGE: REASON) for each variant that is not ok."
  returned: success
  type: list
  elements: str
notes:
  description: What the report left out or could not do (missing reference, partial fleet sums, no plot).
  returned: success
  type: list
  elements: str
report:
  description:
    - The report, as written to RV(json_path).
    - C(variants) (in order), C(reference); C(hosts.<host>.<variant>) holds C(outcome), C(stage), C(reason),
      C(engine), C(speculative), C(summary) (the levels and headline figures, as in
      M(gpufleet.serving.benchmark_report)), C(figures) (C(single_stream_tok_s), C(peak_tok_s),
      C(peak_concurrency), C(ttft_p50_at_1_ms), C(ttft_p50_at_peak_ms), C(tpot_p50_at_1_ms),
      C(tpot_p50_at_peak_ms), C(itl_p50_at_1_ms), C(accept_length), C(failed_requests)), C(ratio)
      (C(single_stream), C(peak), C(tpot)), C(server) and C(teardown); C(fleet.<variant>) holds
      C(hosts), C(summary), C(figures) and C(ratio); C(failures) and C(notes) as returned.
  returned: success
  type: dict
"""
