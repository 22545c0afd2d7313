#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# This file holds the documentation only; the work is done by the action plugin
# plugins/action/experiment_record.py on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: experiment_record
short_description: Write a finished variant's record of an experiment on the controller
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin; nothing is sent to a remote host, no module process is started).
  - Writes O(record) with C(finished_at) (UTC, ISO 8601) added as JSON to O(dest), creating its directory, through a
    temporary file renamed into place, so an interrupted run never leaves half a record.
  - M(gpufleet.serving.experiment_plan) reads these records on the next run and skips the variants recorded as ok
    with the same settings; M(gpufleet.serving.experiment_report) reports them.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.controller_action
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is written; RV(record) is the record without C(finished_at).
options:
  record:
    description:
      - The variant's record (C(variant), C(outcome), C(stage), C(reason), C(bench), C(server), C(teardown),
        C(engine), C(speculative), C(fingerprint), C(host)).
    type: dict
    required: true
  dest:
    description:
      - The record file, C(RESULTS_DIR/records/HOST/VARIANT.json) (M(gpufleet.serving.experiment_plan)'s
        RV(gpufleet.serving.experiment_plan#module:record_files)).
    type: path
    required: true
seealso:
  - module: gpufleet.serving.experiment_plan
  - module: gpufleet.serving.experiment_report
"""

EXAMPLES = r"""
- name: Record the variant on the controller (a re-run skips it)
  gpufleet.serving.experiment_record:
    record: "{{ fleet_variant_records[-1] }}"
    dest: "{{ fleet_experiment.record_files[inventory_hostname][fleet_exp_variant.name] }}"
"""

RETURN = r"""
dest:
  description: O(dest) as given.
  returned: success
  type: str
record:
  description: The record as written, C(finished_at) included (not in check mode).
  returned: success
  type: dict
"""
