#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# This file holds the documentation only; the work is done by the action plugin
# plugins/action/experiment_report.py on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: experiment_report
short_description: Report an experiment's variants against its reference, with its gates
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin; nothing is sent to a remote host).
  - Reads the record of every variant under O(results_dir) (C(records/HOST/VARIANT.json), as the
    experiment playbook writes them) whose settings are those of O(experiment), and writes
    C(experiment.json), C(experiment.md), C(experiment.png) and C(experiment.html) to O(dest_dir).
  - The comparison is that of M(gpufleet.serving.engine_report) (the same figures, ratios against the
    reference, per-category table and plot), each variant with its own engine and name. Without spread
    each host is compared with itself; with spread every host's records form one group,
    C(fleet (spread over N hosts)), so each variant is compared with the reference wherever it ran.
  - The Gates section has one row per host, variant and gate (and concurrency, for C(min_speedup)) -
    the limit, the value measured, pass or FAIL and how the value was found; M(gpufleet.serving.experiment_plan)
    defines each gate.
  - A gate that fails does not fail the task; RV(gate_failures) names each, for the playbook to fail on
    after the report is written. Variants with no record or not completed are in RV(failures) and not gated.
  - The plot is that of M(gpufleet.serving.engine_report), each variant's gate verdict in its
    legend. Its first panel is the throughput-interactivity trade-off, output tok/s per GPU against
    tok/s per user (1000 / TPOT p50), a point per measured level, the Pareto frontier dashed; a
    variant's GPUs are those its teardown released (per server when a server was kept). Then
    output tok/s, TTFT and TPOT p50 (filled) / p99 (hollow) against concurrency, markers at the
    measured levels only, with the 95% interval as a bar where the benchmark ran repeats. A colour
    per variant in every panel, bars included (Okabe-Ito, colour-blind safe), a marker per host,
    one legend right of the panels (defined in docs/benchmark.md, Report plot). It needs
    matplotlib on the controller; without it no PNG is written and the result and the Markdown
    say so.
  - C(experiment.html) holds the Markdown's every section and the plot in one self-contained file
    (inline CSS, the PNG as a data URI, no network access) that opens in any browser.
  - Records made with other settings are left out, with a note.
  - Files are written only where their content differs, so the same records give C(changed=false).
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.controller_action
  - gpufleet.serving.attributes.report_writer
options:
  experiment:
    description:
      - The registered result of M(gpufleet.serving.experiment_plan) (its variants, reference, spread and assignments).
    type: dict
    required: true
  results_dir:
    description:
      - The directory with the records, as given to M(gpufleet.serving.experiment_plan).
    type: path
    required: true
  dest_dir:
    description:
      - Directory on the controller for the files; created when missing.
    type: path
    required: true
  title:
    description:
      - Title of the Markdown and the plot; empty for C(Experiment NAME).
    type: str
    default: ""
  simulator_models:
    description:
      - A simulated fleet's engine flags that its simulator reads, per engine (a list of flags for each engine); the
        simulated fleet's inventory sets them as C(fleet_simulator_models) and experiment.yml passes them.
      - Each variant that gives a setting its engine's list lacks gets a note in the report naming those flags
        (the simulator leaves its figures as they would be without them). Omitted (a real fleet), no note.
    type: dict
seealso:
  - module: gpufleet.serving.experiment_plan
  - module: gpufleet.serving.engine_report
"""

EXAMPLES = r"""
- name: Write the experiment's report
  gpufleet.serving.experiment_report:
    experiment: "{{ experiment }}"
    results_dir: "{{ experiment.results_dir }}"
    dest_dir: "{{ experiment.results_dir }}/report"
  run_once: true
  delegate_to: localhost
  register: experiment_report

- name: Fail naming the gates that failed
  ansible.builtin.fail:
    msg: "{{ experiment_report.gate_failures }}"
  when: experiment_report.gate_failures | length > 0
  run_once: true
"""

RETURN = r"""
json_path:
  description: The JSON report on the controller.
  returned: success
  type: str
  sample: /srv/reports/glm5/experiment.json
markdown_path:
  description: The Markdown report on the controller.
  returned: success
  type: str
  sample: /srv/reports/glm5/experiment.md
plot_path:
  description: The PNG plot on the controller; null when matplotlib is missing.
  returned: success
  type: str
  sample: /srv/reports/glm5/experiment.png
html_path:
  description: The self-contained HTML report (the Markdown's sections and the plot in one file) on the controller.
  returned: success
  type: str
  sample: /srv/reports/glm5/experiment.html
markdown:
  description: The Markdown text.
  returned: success
  type: str
lines:
  description: One line per host (or spread group) and variant - outcome, tok/s and ratios, GPUs free after, gates.
  returned: success
  type: list
  elements: str
failures:
  description: "C(HOST VARIANT: ...) for each assigned variant with no record or not completed."
  returned: success
  type: list
  elements: str
gate_failures:
  description: "C(HOST VARIANT: GATE value V, limit L (how V was found)) for each gate that failed."
  returned: success
  type: list
  elements: str
  sample: ["gpu01 ep8: min_speedup at concurrency 1 value 0.92, limit 1.1 (output tok/s at concurrency 1: 58.5 vs tp8's 63.6)"]
notes:
  description: What the report left out or could not do (records of other settings, no plot).
  returned: success
  type: list
  elements: str
report:
  description:
    - The report, as written to RV(json_path) - that of M(gpufleet.serving.engine_report) with C(gates)
      (rows of C(host), C(variant), C(gate), C(level), C(limit), C(value), C(passed), C(detail)),
      C(gate_failures) and C(experiment) (C(name), C(file), C(checksum), C(reference), C(spread), C(assignments)).
  returned: success
  type: dict
"""
