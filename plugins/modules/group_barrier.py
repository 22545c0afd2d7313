#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# This file holds the documentation only; the work is done by the action plugin
# plugins/action/group_barrier.py on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: group_barrier
short_description: Let the nodes of a server group meet at a step of an experiment, on the controller
version_added: 0.2.0
description:
  - Runs on the controller only (an action plugin; nothing is sent to a remote host, no module process is started).
  - An experiment runs each host at its own pace, so the nodes of a variant that spans hosts (docs/multinode.md) reach
    its launch and its stop at different times; a node of rank 1 or more, which measures nothing, would stop the
    group while rank 0 still benchmarks it. Each node writes its marker C(DIR/barriers/RUN/STEP/NODE) and waits until
    every node of O(nodes) has written its own.
  - Fewer than two O(nodes) (a server on one host) is no group; nothing is written or waited for.
  - Fails, naming the nodes that did not come, after O(timeout) seconds; at once, naming them and why, where they left
    the run with O(leave).
  - With O(leave), this node leaves the run (it halted and launches nothing more); nothing is waited for, and any node
    waiting for it at any step fails at once.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.controller_action
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is written or waited for.
options:
  dir:
    description: The experiment's results directory (the markers go under C(barriers/)).
    type: path
    required: true
  run:
    description:
      - This run of the experiment (M(gpufleet.serving.experiment_plan)'s
        RV(gpufleet.serving.experiment_plan#module:run)), so an earlier run's markers never count.
    type: str
    required: true
  step:
    description: The step the nodes meet at (for example C(tp16-launch)); required unless O(leave) is given.
    type: str
  node:
    description: This node (the host).
    type: str
    required: true
  nodes:
    description: Every node of the group, rank 0 first.
    type: list
    elements: str
    required: true
  timeout:
    description: Seconds to wait for the other nodes (a whole benchmark at rank 0 may pass before they meet).
    type: float
    default: 86400
  leave:
    description: Why this node halted; it leaves the run instead of meeting at a step.
    type: str
seealso:
  - module: gpufleet.serving.experiment_plan
"""

EXAMPLES = r"""
- name: Wait until every node of the group has measured it before the stop
  gpufleet.serving.group_barrier:
    dir: "{{ fleet_experiment.results_dir }}"
    run: "{{ fleet_experiment.run }}"
    step: "{{ fleet_exp_variant.name }}-stop"
    node: "{{ inventory_hostname }}"
    nodes: "{{ fleet_variant_nodes }}"
  delegate_to: localhost
"""

RETURN = r"""
left:
  description: This node, where O(leave) was given.
  returned: with O(leave)
  type: str
waited:
  description: Seconds this node waited for the others.
  returned: success, without O(leave)
  type: float
nodes:
  description: O(nodes) as given.
  returned: success, without O(leave)
  type: list
  elements: str
"""
