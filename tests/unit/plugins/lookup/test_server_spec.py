# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server_spec lookup, through a real ansible-playbook: a host's ENGINE_server_* variables
(inventory, templated, overridden) become one dict with the table's defaults; a bad value fails
naming the variable before anything runs."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.ansible import run_playbook

PLAY = """
- name: Read the server's settings
  hosts: all
  gather_facts: false
  tasks:
    - name: Show
      ansible.builtin.debug:
        msg: "SPEC {{ lookup('gpufleet.serving.server_spec', engine, overrides=overrides | default({})) | to_json }}"
    - name: Not reached when a setting is bad
      ansible.builtin.debug:
        msg: REACHED
"""


@pytest.fixture(scope="module")
def playbook(tmp_path_factory):
    path = tmp_path_factory.mktemp("lookup") / "play.yml"
    path.write_text(PLAY)
    return path


def specs(run):
    return [json.loads(json.loads('"%s"' % m)) for m in re.findall(r'"msg": "SPEC (.*)"', run.stdout)]


def test_variables_defaults_and_overrides(playbook):
    run = run_playbook(playbook, {"engine": "sglang", "sglang_server_model_path": "/models/{{ 'k2' }}",
                                  "sglang_server_port": "30001", "sglang_server_speculative_args": ["--x"],
                                  "overrides": {"state": "stopped", "tp_size": None, "host": "127.0.0.2"}},
                       inventory="h1,")
    assert run.returncode == 0, run.stdout + run.stderr
    (spec,) = specs(run)
    assert (spec["model_path"], spec["port"], spec["instance"], spec["state"]) == (
        "/models/k2", 30001, "sglang-30001", "stopped")
    # A null override leaves the variable (here its default); a given one wins.
    assert (spec["tp_size"], spec["host"], spec["speculative_on"]) == (8, "127.0.0.2", True)
    assert (spec["engine"], spec["vars_prefix"], spec["tested_version"]) == ("sglang", "sglang_server_", "0.5.23")


def test_an_empty_speculative_override_is_a_base_server(playbook):
    run = run_playbook(playbook, {"engine": "vllm", "vllm_server_speculative": {"draft_model_path": "/d"},
                                  "overrides": {"speculative": {}}}, inventory="h1,")
    assert run.returncode == 0, run.stdout + run.stderr
    (spec,) = specs(run)
    assert spec["speculative"] is None and spec["speculative_on"] is False and spec["port"] == 8000


@pytest.mark.parametrize("extra, message", [
    ({"engine": "sglang", "sglang_server_tp_size": "eight"}, "sglang_server_tp_size must be a whole number, not str 'eight'"),
    ({"engine": "tgi"}, "unknown engine 'tgi'"),
])
def test_a_bad_setting_fails_naming_it(playbook, extra, message):
    run = run_playbook(playbook, extra, inventory="h1,")
    out = run.stdout + run.stderr
    assert run.returncode != 0 and "REACHED" not in out, out
    assert "server_spec: " + message in out, out
