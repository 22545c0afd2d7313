# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark_options lookup: the playbooks' `benchmark` dict over their older variables.

The merge and its errors are checked on the function; the one deprecation warning per run, the
play's variables and the failure before anything runs through a real ansible-playbook."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.gpufleet.serving.plugins.lookup import benchmark_options as lk
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import schema
from tests.support.ansible import run_playbook
from tests.support.paths import REPO

VALID = schema.benchmark_options()


def test_the_keys_are_the_fleet_role_benchmark_suboptions():
    spec = yaml.safe_load((pathlib.Path(REPO) / "roles" / "_fleet" / "meta" / "argument_specs.yml").read_text())
    suboptions = spec["argument_specs"]["benchmark"]["options"]["fleet_benchmark"]["options"]
    assert list(VALID) == list(suboptions) and "levels" in VALID


def test_benchmark_wins_over_the_older_variables_which_win_over_the_defaults():
    options, warning = lk.merge({"repeats": 3, "output_len": None},
                                {"swap_bench_repeats": ("repeats", 2), "swap_bench_levels": ("levels", [1, 4])},
                                {"workload": {"source": "builtin"}, "levels": [1, 128]}, VALID)
    assert options == {"repeats": 3, "levels": [1, 4], "workload": {"source": "builtin"}}
    assert warning == ("swap_bench_repeats is deprecated: use benchmark: {repeats: ...}; "
                       "swap_bench_levels is deprecated: use benchmark: {levels: ...}")


def test_nothing_set_gives_the_defaults_and_no_warning():
    assert lk.merge(None, {}, {"levels": [1, 128]}, VALID) == ({"levels": [1, 128]}, "")


@pytest.mark.parametrize("benchmark, message", [
    ({"level": [1]}, "benchmark.level: unknown key; the valid keys are levels, requests_per_level"),
    ({"repeats": "three"}, "benchmark.repeats must be a whole number, not str 'three'"),
    ({"levels": [1, "4"]}, "benchmark.levels item 1 must be a whole number"),
    ([1, 4], "benchmark must be a mapping of llm_benchmark options (levels, "),
])
def test_bad_benchmark_names_the_key(benchmark, message):
    with pytest.raises(InvalidInput) as exc:
        lk.merge(benchmark, {}, {}, VALID)
    assert message in exc.value.msg


PLAY = """
- name: Settle the options twice on two hosts
  hosts: all
  gather_facts: false
  tasks:
    - name: Settle
      ansible.builtin.set_fact:
        fleet_benchmark: "{{ lookup('gpufleet.serving.benchmark_options', 'swap_bench', defaults={'levels': [1, 128]}) }}"
    - name: Settle again
      ansible.builtin.set_fact:
        again: "{{ lookup('gpufleet.serving.benchmark_options', 'swap_bench', defaults={'levels': [1, 128]}) }}"
    - name: Show
      ansible.builtin.debug:
        msg: "OPTIONS {{ fleet_benchmark | to_json }}"
    - name: Not reached when the options are bad
      ansible.builtin.debug:
        msg: REACHED
"""


@pytest.fixture(scope="module")
def playbook(tmp_path_factory):
    path = tmp_path_factory.mktemp("lookup") / "play.yml"
    path.write_text(PLAY)
    return path


def test_older_variables_warn_once_per_run_naming_each(playbook):
    run = run_playbook(playbook, {"swap_bench_levels": [1, 4], "swap_bench_output_len": 16,
                                  "benchmark": {"output_len": 32}}, inventory="h1,h2,")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert out.count("[DEPRECATION WARNING]") == 1, out
    assert ("swap_bench_levels is deprecated: use benchmark: {levels: ...}; "
            "swap_bench_output_len is deprecated: use benchmark: {output_len: ...}") in out
    assert "collection 'gpufleet.serving' version 2.0.0" in out
    assert out.count('"OPTIONS {\\"levels\\": [1, 4], \\"output_len\\": 32}"') == 2, out


def test_the_benchmark_dict_alone_does_not_warn(playbook):
    run = run_playbook(playbook, {"benchmark": {"repeats": 2}}, inventory="h1,")
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "DEPRECATION" not in out, out
    assert '"OPTIONS {\\"levels\\": [1, 128], \\"repeats\\": 2}"' in out, out


def test_an_unknown_key_fails_before_anything_runs(playbook):
    run = run_playbook(playbook, {"benchmark": {"levles": [1]}}, inventory="h1,")
    out = run.stdout + run.stderr
    assert run.returncode != 0 and "REACHED" not in out, out
    assert "benchmark.levles: unknown key; the valid keys are %s" % ", ".join(VALID) in out, out
