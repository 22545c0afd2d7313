# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server_group lookup through a real ansible-playbook: each host of a group gets its rank and rank 0's
address from the inventory; a bad group fails on the controller, naming the group and the host, before any task
runs on a host; and the server_spec lookup takes the planned node settings (the _server role's fact)."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.ansible import run_playbook

PLAY = """
- name: Plan the group
  hosts: all
  gather_facts: false
  tasks:
    - name: Plan
      ansible.builtin.set_fact:
        _server_group: "{{ lookup('gpufleet.serving.server_group', 'sglang') | combine({'engine': 'sglang'}) }}"
    - name: Show
      ansible.builtin.debug:
        msg: "GROUP {{ {'group': _server_group, 'spec': lookup('gpufleet.serving.server_spec', 'sglang')} | to_json }}"
"""

INVENTORY = """
tp16:
  hosts:
    a: {ansible_host: 10.0.0.1}
    b: {ansible_host: 10.0.0.2}
  vars:
    sglang_server_nodes: "{{ groups['tp16'] }}"
    sglang_server_tp_size: 16
    sglang_server_model_path: /m
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    where = tmp_path_factory.mktemp("group")
    (where / "play.yml").write_text(PLAY)
    return where


def shown(run):
    return {m["group"]["node"]: m for m in
            (json.loads(json.loads('"%s"' % s)) for s in re.findall(r'"msg": "GROUP (.*)"', run.stdout))}


def test_each_node_gets_its_rank_and_its_spec_the_node_settings(files):
    (files / "inv.yml").write_text(INVENTORY)
    run = run_playbook(files / "play.yml", {}, inventory=str(files / "inv.yml"))
    assert run.returncode == 0, run.stdout + run.stderr
    got = shown(run)
    assert (got["a"]["group"]["rank"], got["b"]["group"]["rank"]) == (0, 1)
    assert got["b"]["spec"]["node"] == "b" and got["b"]["spec"]["dist_addr"] == "10.0.0.1"


def test_a_bad_group_fails_naming_it_and_the_host(files):
    (files / "bad.yml").write_text(INVENTORY.replace("    b: {ansible_host: 10.0.0.2}",
                                                     "    b: {ansible_host: 10.0.0.2, sglang_server_tp_size: 12}"))
    run = run_playbook(files / "play.yml", {}, inventory=str(files / "bad.yml"))
    out = run.stdout + run.stderr
    assert run.returncode != 0 and "GROUP" not in out, out
    assert "server_group: server group [a, b], host b: sglang_server_tp_size is 12 here and 16 on rank 0 (a)" in out, out


REQUEST_PLAY = """
- name: A variant that sets the nodes, planned before any _server_group fact
  hosts: all
  gather_facts: false
  vars:
    request: {engine: sglang, overrides: {nodes: [b, a], tp_size: 16}}
  tasks:
    - name: Show
      ansible.builtin.debug:
        msg: >-
          GROUP {{ {'group': lookup('gpufleet.serving.server_group', 'sglang',
                                    planned=lookup('gpufleet.serving.server_spec', request).group),
                    'spec': lookup('gpufleet.serving.server_spec', request)} | to_json }}
"""


def test_nodes_a_request_sets_are_planned_by_the_spec_lookup_and_kept_by_the_group_lookup(files):
    (files / "request.yml").write_text(REQUEST_PLAY)
    (files / "plain.yml").write_text("all:\n  hosts:\n    a: {ansible_host: 10.0.0.1, sglang_server_model_path: /m}\n"
                                     "    b: {ansible_host: 10.0.0.2, sglang_server_model_path: /m}\n")
    run = run_playbook(files / "request.yml", {}, inventory=str(files / "plain.yml"))
    assert run.returncode == 0, run.stdout + run.stderr
    got = shown(run)
    assert (got["b"]["group"]["rank"], got["a"]["group"]["rank"], got["a"]["group"]["requested"]) == (0, 1, True)
    assert got["a"]["spec"]["node"] == "a" and got["a"]["spec"]["dist_addr"] == "10.0.0.2"
    assert got["a"]["group"]["gpus_per_node"] == 8
