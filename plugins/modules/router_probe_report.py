#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# This file holds the documentation only; the work is done by the action plugin
# plugins/action/router_probe_report.py on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: router_probe_report
short_description: The report of a rollout's traffic probe, a table and a plot
version_added: 0.1.0
description:
  - Runs on the controller only (an action plugin; nothing is sent to a remote host).
  - Turns a M(gpufleet.serving.router_probe) result into C(<basename>.json), C(<basename>.md), C(<basename>.png)
    and C(<basename>.html) under O(dest_dir) - requests sent, completed, failed and broken streams; TTFT and TPOT
    p50/p99 before, during and after the span in which the router's healthy workers changed; the fewest healthy
    workers the router listed; per host its drain time and time out of the router; a plot of output tok/s and
    healthy workers over time (docs/rollout.md explains each figure).
  - Files are written only where their content differs.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.controller_action
  - gpufleet.serving.attributes.report_writer
options:
  probe:
    description:
      - The M(gpufleet.serving.router_probe) result (as C(ansible.builtin.async_status) returns it).
    type: dict
    required: true
  drains:
    description:
      - Per host of the rollout, the C(drain) of its teardown fact (C(sglang_server_teardown) or
        C(vllm_server_teardown) - C(worker), C(drain_s)), or null for a host that was not drained.
    type: dict
    default: {}
  dest_dir:
    description: Directory on the controller for the files; created when missing.
    type: path
    required: true
  basename:
    description: File name stem of the four files.
    type: str
    default: rollout_probe
  title:
    description: Title of the Markdown and the plot.
    type: str
    default: Traffic through the router during the rollout
seealso:
  - module: gpufleet.serving.router_probe
"""

EXAMPLES = r"""
- name: Write the probe's report
  gpufleet.serving.router_probe_report:
    probe: "{{ probe_result }}"
    drains: {gpu01: "{{ hostvars.gpu01.sglang_server_teardown.drain }}"}
    dest_dir: reports/rollout
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
figures:
  description:
    - The figures a rollout is judged by - C(sent) (requests the probe sent), C(completed) (streams that ended with
      C(data [DONE])), C(failed) (refused, an error status, never answered), C(broken) (streams that started and
      were cut), C(healthy_floor) (the fewest healthy workers the router listed; null when never read).
  returned: success
  type: dict
  sample: {"sent": 184, "completed": 184, "failed": 0, "broken": 0, "healthy_floor": 2}
headline:
  description: The figures above in one line.
  returned: success
  type: str
markdown:
  description: The Markdown report.
  returned: success
  type: str
json_path:
  description: The JSON report (the figures and the series the plot draws).
  returned: success
  type: str
markdown_path:
  description: The Markdown report's file.
  returned: success
  type: str
plot_path:
  description: The PNG plot; null when matplotlib is missing.
  returned: success
  type: str
html_path:
  description: The Markdown and the plot in one HTML file.
  returned: success
  type: str
report:
  description: Everything the JSON report holds.
  returned: success
  type: dict
notes:
  description: Why a part is missing (no matplotlib).
  returned: success
  type: list
  elements: str
"""
