#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# This file holds the documentation only; the work is done by the action plugin
# plugins/action/experiment_plan.py on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: experiment_plan
short_description: Read an experiment file, refuse what is wrong, and say what each host will run
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin; nothing is sent to a remote host).
  - Reads an experiment file (a list of server configurations to launch, benchmark and compare in turn),
    checks every key and value before any host is touched, expands each C(matrix) into variants,
    assigns the variants to O(hosts), and compares the result with the records of earlier runs under
    O(results_dir), so a run after an interruption skips what is recorded.
  - "A bad file fails with C(FILE:LINE: KEY.PATH: what is wrong and what to change), for example
    C(exp.yml:12: variants[2].server.tp_sise: unknown server option; did you mean tp_size? ...)."
  - "The file, a YAML mapping:"
  - "C(name): the experiment's name (default: the file name without C(.yml) and C(.experiment))."
  - "C(reference) (required): the variant the others are compared with (a name after the matrices are expanded)."
  - "C(spread): V(true) when the hosts are identical and share the variants: host i of N runs variants
    i, i+N, i+2N, ... and the report merges them; V(false) (default): every host runs every variant."
  - "C(max_variants) (default 32) and C(confirm_large) (default V(false)): more variants than C(max_variants)
    are refused unless C(confirm_large) is V(true) or O(confirm) is given."
  - "C(category_level): the concurrency the report's per-category table compares (default: the lowest at which
    every variant has per-category figures; one not measured on every side falls back to that, with a warning).
    The report and the play's closing lines warn of a category with fewer than 10 requests there, or missing there."
  - "C(benchmark): settings of M(gpufleet.serving.llm_benchmark) shared by every variant: C(levels),
    C(requests_per_level), C(warmup_requests), C(input_len), C(output_len), C(workload), C(repeats), C(category_passes)
    and the goodput SLOs C(slo_ttft_ms), C(slo_tpot_ms), C(slo_e2e_ms)
    (the C(gpufleet.serving._fleet) role's C(fleet_bench_*) options without the prefix; read from its
    argument spec)."
  - "C(gates): limits every variant must meet (the reference is never gated on speed-up):
    C(min_acceptance_length) (mean acceptance length over the levels; not applicable to a variant without
    C(speculative)), C(min_speedup) (output tok/s divided by the reference's at the same concurrency, at each
    of C(levels); a number, or C({value: 1.3, levels: [1]}); without C(levels) every level both ran),
    C(max_ttft_p99_ms) and C(max_tpot_p99_ms) (the highest p99 of any level), C(max_failed_requests)
    (all levels together), C(min_goodput_fraction) (the lowest share of counted requests within the
    benchmark's goodput SLOs at any level, from 0 to 1) and C(per_category) (per workload category,
    C({code: {min_acceptance_length: 2.5, max_tpot_p99_ms: 40}}) - that category's acceptance pooled over the levels
    and its highest TTFT or TPOT p99 of any level), C(throttled) (V(false) - no level ran on a throttled GPU) and
    C(min_tokens_per_joule) (the lowest tok/J of any level); the last two need llm_benchmark's GPU telemetry
    (docs/telemetry.md). A gate whose figure is missing fails."
  - "C(variants) (required): a list; each variant has C(name) and C(engine) (V(sglang) or V(vllm)), and may have
    C(server) (the engine's server role variables without the C(ENGINE_server_) prefix, checked against
    the role's argument spec, for example C(model_path), C(tp_size), C(mem_fraction_static), C(extra_args);
    not C(state), C(env) or the speculative ones, which have their own keys), C(speculative) (the
    O(gpufleet.serving.server_plan#module:speculative) settings: C(algorithm), C(draft_model_path),
    C(num_steps), C(eagle_topk), C(num_draft_tokens); or V(eagle_drafter): each host's C(eagle_drafter_*)
    variables, the variant launched through the C(gpufleet.serving.eagle_drafter) role, which checks the
    drafter and sets the memory settings with the drafter loaded), C(env) (environment variables of the server),
    C(benchmark) and C(gates) (merged key by key over the top-level ones) and C(matrix)."
  - "A variant's C(server.nodes) is its topology (docs/multinode.md): the hosts it runs on, rank 0 first, each a host
    of O(hosts). One host is a plain server there; two or more are one server across them (for example
    C(nodes: [gpu-a, gpu-b]) with C(tp_size: 16) against C(nodes: [gpu-a]) with C(tp_size: 8)), measured at rank 0.
    A host not among a variant's nodes stands by while it runs; variants without C(nodes) run as C(spread) says.
    Every variant that spans hosts must span the same hosts; they run first (RV(slots))."
  - "C(matrix): server options, each with a list of values; the variant becomes one variant per combination,
    in the order the keys are written (the last key changing fastest), named
    C(NAME-KEYVALUE-KEYVALUE), for example C(ep-tp_size4-mem_fraction_static0.7). A key with no values
    expands to zero variants and is refused."
  - A server option left out keeps the role's value (its default or the inventory's), so one file runs on
    fleets with other paths when C(model_path) is set in the inventory.
  - Each variant's fingerprint on a host is the sha256 of its engine, server, speculative, env and benchmark
    settings and of the server settings that host's variables give it (its C(ENGINE_server_*) and
    C(eagle_drafter_*) variables from the inventory's host and group variables and extra vars, under the
    variant's own; the settings that compose the command line and environment, the API key only as set or
    not); a record counts only while the fingerprint is the same. A variant recorded as ok with the same
    fingerprint is skipped; one recorded with other settings (in the file or on its host), or recorded as
    not completed, runs again.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.controller_action
attributes:
  check_mode:
    support: full
    details:
      - In check mode the file is checked and the plan returned; with O(fresh) nothing is moved.
options:
  file:
    description:
      - The experiment file on the controller (format above). Exactly one of O(file) and O(experiment).
    type: path
  experiment:
    description:
      - The experiment itself, the mapping a file would hold (format above), as a playbook builds it
        (C(compare_engines.yml) builds its variants this way). Errors name O(origin) and the key path.
      - Exactly one of O(file) and O(experiment).
    type: dict
  origin:
    description:
      - What errors in O(experiment) name in place of a file and line, for example the playbook and its variables.
    type: str
    default: the given experiment
  resume:
    description:
      - Read the records of earlier runs and skip what is recorded (the default).
      - V(false) reads and moves nothing, so every variant runs and each record replaces the earlier one.
    type: bool
    default: true
  hosts:
    description:
      - The hosts that run the experiment, in order (with C(spread), host i runs every N-th variant from i).
    type: list
    elements: str
    required: true
  results_dir:
    description:
      - Directory on the controller with the records of finished variants, C(records/HOST/VARIANT.json)
        (host and variant names percent-quoted into file names; RV(record_files) has each path).
    type: path
    required: true
  fresh:
    description:
      - Start again - move C(records/) aside to C(records.old-YYYYmmddTHHMMSS) (UTC; never deleted) so every
        variant runs. The only case where the task reports C(changed).
    type: bool
    default: false
  confirm:
    description:
      - Run more variants than the file's C(max_variants) (as C(confirm_large) in the file).
    type: bool
    default: false
seealso:
  - module: gpufleet.serving.experiment_report
  - module: gpufleet.serving.server_plan
  - module: gpufleet.serving.llm_benchmark
"""

EXAMPLES = r"""
- name: Plan the experiment
  gpufleet.serving.experiment_plan:
    file: "{{ experiment_file }}"
    hosts: "{{ ansible_play_hosts_all }}"
    results_dir: "{{ playbook_dir }}/reports/{{ experiment_file | basename }}"
  run_once: true
  delegate_to: localhost
  register: experiment

- name: Show what each host runs
  ansible.builtin.debug:
    msg: "{{ experiment.lines }}"
  run_once: true
"""

RETURN = r"""
name:
  description: The experiment's name.
  returned: success
  type: str
  sample: glm5-tp8-vs-ep8
file:
  description: The experiment file's absolute path.
  returned: success
  type: str
checksum:
  description: C(sha256:) and the file's digest.
  returned: success
  type: str
reference:
  description: The reference variant.
  returned: success
  type: str
  sample: tp8
spread:
  description: Whether the hosts share the variants.
  returned: success
  type: bool
gates:
  description: The top-level gates.
  returned: success
  type: dict
variants:
  description:
    - Every variant after the matrices, in file order, with C(name), C(engine), C(role) (the server role),
      C(vars_prefix) (C(ENGINE_server_)), C(server), C(speculative) (null without), C(env), C(benchmark)
      (merged), C(gates) (merged; the reference's without C(min_speedup)), C(matrix_values) (the
      combination, empty without a matrix) and C(fingerprint).
  returned: success
  type: list
  elements: dict
assignments:
  description: Per host, the variants it runs, in order.
  returned: success
  type: dict
  sample: {"gpu01": ["tp8", "ep8"], "gpu02": ["tp8", "ep8"]}
todo:
  description: Per host, the assigned variants without a usable record (to run now), in order.
  returned: success
  type: dict
slots:
  description:
    - Per host, the order the variants of RV(todo) run in, with C(null) where the host stands by; the variants
      that span hosts first, each at the same position on every one of its nodes (their nodes launch together).
  returned: success
  type: dict
  sample: {"gpu-a": ["tp16", "tp8"], "gpu-b": ["tp16"]}
run:
  description: This run's identifier (the nodes of a group meet under it, M(gpufleet.serving.group_barrier)).
  returned: success
  type: str
recorded:
  description: Per host, the variants recorded as ok with the same settings (skipped).
  returned: success
  type: dict
host_fingerprints:
  description:
    - Per host and variant, the variant's fingerprint on that host (its own settings and the host's server
      settings), which its record carries. A host whose variables cannot be read gets a fingerprint that
      matches no record (its variants run again) and a line in RV(lines) saying why.
  returned: when O(resume) is true
  type: dict
rerun:
  description: Per host, the variants recorded with other settings (part of RV(todo)).
  returned: success
  type: dict
record_files:
  description: Per host and variant, the record file the playbook writes when the variant finishes.
  returned: success
  type: dict
results_dir:
  description: O(results_dir) as given.
  returned: success
  type: str
lines:
  description: Per host what runs and what is skipped and why; what O(fresh) moved; unreadable records.
  returned: success
  type: list
  elements: str
  sample: ["gpu01: 1 of 2 variants to run: ep8", "gpu01: 1 skipped, recorded with the same settings: tp8 (finished 2026-05-01T10:00:00Z)"]
"""
