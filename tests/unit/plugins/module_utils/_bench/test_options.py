# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench/options.py: the benchmark settings' table gives llm_benchmark's argument spec of those options
and the keys a playbook's or an experiment's `benchmark` takes (types, no defaults)."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import options
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.formats import FORMATS


def test_the_argument_spec_sets_the_modules_defaults_and_checks_the_workload():
    checked = ArgumentSpecValidator(options.argument_spec()).validate({"workload": {"source": "builtin"}})
    assert not checked.error_messages
    params = checked.validated_parameters
    assert params["levels"] == options.DEFAULT_LEVELS and params["input_len"] == 512 and params["repeats"] == 1
    assert params["category_passes"] is False and params["requests_per_level"] is None
    assert params["workload"]["format"] == "auto" and params["workload"]["location"] == "controller"
    bad = ArgumentSpecValidator(options.argument_spec()).validate({"workload": {"source": "file"}})
    assert any("path" in message for message in bad.error_messages), bad.error_messages


def test_the_spec_does_not_share_its_default_list():
    options.argument_spec()["levels"]["default"].append(999)
    assert 999 not in options.argument_spec()["levels"]["default"] and 999 not in options.DEFAULT_LEVELS


def test_the_keys_a_playbook_sets_have_types_and_no_defaults():
    kinds = options.kinds()
    assert list(kinds) == [option.name for option in options.OPTIONS]
    assert kinds["levels"] == {"type": "list", "elements": "int", "description": "Concurrency levels, run in the order given."}
    assert all("default" not in kind for kind in kinds.values())
    workload = {option.name: option for option in options.OPTIONS}["workload"]
    assert {sub.name: sub for sub in workload.suboptions}["format"].choices == FORMATS
