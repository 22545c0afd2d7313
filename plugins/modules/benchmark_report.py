#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# This file holds the documentation only; the work is done by the action plugin
# plugins/action/benchmark_report.py on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: benchmark_report
short_description: Merge per-host llm_benchmark results into a JSON, Markdown, PNG and HTML report
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin; nothing is sent to a remote host).
  - Merges the results of M(gpufleet.serving.llm_benchmark) from every host, for a baseline
    and a candidate run, into one report, and writes four files to O(dest_dir) on the controller
    C(<basename>.json), C(<basename>.md), C(<basename>.png) and C(<basename>.html).
  - The Markdown has a summary table per host and for the fleet (single-stream tok/s, peak
    tok/s and its concurrency, TTFT p50/p99 at concurrency 1 and at the peak, acceptance
    length, failed requests), then tok/s per concurrency with the candidate/baseline ratio,
    for the fleet and for each host. Fleet tok/s at a concurrency is the sum over hosts;
    a level missing on some hosts is summed over those that have it, with a note.
  - Per host, a latency-by-level table follows with every figure of every level, both sides
    (tok/s, the server counter's tok/s and the client/counter ratio, request/s, goodput,
    TTFT, TPOT, ITL and E2E p50/p99; an ITL estimate is marked with C(~)). Open-loop levels
    (M(gpufleet.serving.llm_benchmark) C(request_rates)) are named by their rate.
  - The PNG's first panel is the throughput-interactivity trade-off, output tok/s per GPU
    against tok/s per user (1000 / TPOT p50), a point per measured level, the Pareto frontier
    dashed. Then output tok/s, TTFT and TPOT p50 (filled) / p99 (hollow) against concurrency (or
    the request rate when every level is open-loop), markers at the measured levels only, with
    the 95% interval as a bar where the benchmark ran repeats. A colour per variant in every panel
    (Okabe-Ito, colour-blind safe), a marker per host, one legend right of the panels.
    Defined in docs/benchmark.md (Report plot). It needs matplotlib on the controller; without
    it no PNG is written and the result and the Markdown say so.
  - C(<basename>.html) holds the Markdown's every section and the plot in one self-contained
    file (inline CSS, the PNG as a data URI, no network access) that opens in any browser.
  - The results carry no GPU count; the first panel's tok/s is per GPU with O(gpus_per_server),
    per server (and the axis says so) without it.
  - Files are written only where their content differs (they carry no timestamp), so the
    same results give C(changed=false).
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.controller_action
  - gpufleet.serving.attributes.report_writer
options:
  results:
    description:
      - "Per-host results. A dict C(host -> {baseline: R, candidate: R}) where R is a registered
        M(gpufleet.serving.llm_benchmark) result (or just its C(levels) list); or
        C(host -> [R_baseline, R_candidate]); or a list of C({host: ..., baseline: R, candidate: R})."
      - Either side may be missing for a host. A failed or skipped result is left out with a note.
      - A host's dict may hold C(topology) (C(nodes), C(nnodes), C(tp_size), C(pp_size), C(dp_size), C(ep_size), as the
        P(gpufleet.serving.server_topology#filter) filter gives them) for a server that spans hosts, measured at its
        rank 0; the report keeps it under the host and names it in the host's section and in its notes.
    type: raw
    required: true
  dest_dir:
    description:
      - Directory on the controller for the files; created when missing.
    type: path
    required: true
  basename:
    description:
      - File name stem of the four files.
    type: str
    default: benchmark
  title:
    description:
      - Title of the Markdown and the plot.
    type: str
    default: LLM serving benchmark
  baseline_label:
    description:
      - Name of the baseline in tables and the plot.
    type: str
    default: baseline
  candidate_label:
    description:
      - Name of the candidate in tables and the plot.
    type: str
    default: candidate
  gpus_per_server:
    description:
      - GPUs each benchmarked server runs on (its tensor-parallel size times its data-parallel size,
        e.g. 8 for TP8); the plot's first panel divides tok/s by it. Unset, that panel shows tok/s
        per server.
    type: int
seealso:
  - module: gpufleet.serving.llm_benchmark
"""

EXAMPLES = r"""
# Each host registered bench_base and bench_eagle with gpufleet.serving.llm_benchmark.
- name: Keep both runs of this host as one fact
  ansible.builtin.set_fact:
    bench_pair:
      baseline: "{{ bench_base }}"
      candidate: "{{ bench_eagle }}"

- name: Write the fleet report on the controller
  gpufleet.serving.benchmark_report:
    results: >-
      {{ dict(ansible_play_hosts_all
              | zip(ansible_play_hosts_all | map('extract', hostvars)
                    | map(attribute='bench_pair', default={}))) }}
    dest_dir: "{{ playbook_dir }}/reports/eagle3"
    title: Kimi-K2.5 INT4 TP8, SGLang vs SGLang + EAGLE-3
    baseline_label: sglang
    candidate_label: sglang+eagle3
  run_once: true
  register: report

- name: Show the table
  ansible.builtin.debug:
    msg: "{{ report.markdown }}"
  run_once: true
"""

RETURN = r"""
json_path:
  description: The JSON report on the controller.
  returned: success
  type: str
  sample: /srv/reports/eagle3/benchmark.json
markdown_path:
  description: The Markdown report on the controller.
  returned: success
  type: str
  sample: /srv/reports/eagle3/benchmark.md
plot_path:
  description: The PNG plot on the controller; null when matplotlib is missing.
  returned: success
  type: str
  sample: /srv/reports/eagle3/benchmark.png
html_path:
  description: The self-contained HTML report (the Markdown's sections and the plot in one file) on the controller.
  returned: success
  type: str
  sample: /srv/reports/eagle3/benchmark.html
markdown:
  description: The Markdown text.
  returned: success
  type: str
notes:
  description: What the report left out or could not do (missing results, partial fleet sums, no plot).
  returned: success
  type: list
  elements: str
  sample: ["gpu03 candidate: no result (no answer from http://127.0.0.1:30000/v1/models)"]
report:
  description:
    - The merged report, as written to RV(json_path).
    - C(hosts.<host>.baseline|candidate) and C(fleet.baseline|candidate) hold C(levels) (per concurrency
      C(output_tok_s), C(ttft_p50_ms), C(ttft_p99_ms), C(accept_length), C(failed)),
      C(single_stream_tok_s), C(peak_tok_s), C(peak_concurrency), C(ttft_at_1_ms), C(ttft_at_peak_ms),
      C(accept_length), C(failed); C(hosts.<host>.ratio) and C(fleet.ratio) list C(concurrency),
      C(baseline_tok_s), C(candidate_tok_s), C(ratio) (candidate/baseline).
  returned: success
  type: dict
"""
