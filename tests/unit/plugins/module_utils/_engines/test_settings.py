# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server spec table (plugins/module_utils/_engines/settings.py): its rows, the defaults, the
checks and conversions the server_spec lookup applies, and server_plan's options."""

from __future__ import annotations

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry, settings
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import FLAG_KINDS
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from tests.support.paths import REPO

ENGINES = [e.name for e in registry.engines()]
TYPES = {"str", "int", "float", "bool", "list", "dict", "path"}


def test_every_row_is_well_formed():
    names = [s.name for s in settings.SETTINGS]
    assert len(names) == len(set(names))
    for setting in settings.SETTINGS:
        assert setting.type in TYPES, setting.name
        assert setting.elements is None or setting.type == "list", setting.name
        for engine, (flag, kind) in setting.flags.items():
            assert setting.applies_to(engine) and kind in FLAG_KINDS, setting.name
            assert (flag is None) == (kind == "args") and (flag is None or flag.startswith("--")), setting.name
        for engine in ENGINES:
            if setting.applies_to(engine):
                assert setting.doc_for(engine, "T") and all(p.strip() for p in setting.doc_for(engine, "T"))
                assert "{" not in " ".join(setting.doc_for(engine, "T")), setting.name


@pytest.mark.parametrize("engine", ENGINES)
def test_the_built_in_engines_take_their_flags_from_the_table(engine):
    flags = settings.option_flags(engine)
    assert registry.get(engine).option_flags == flags
    assert [row[0] for row in flags][:3] == ["tp_size", "host", "port"] and flags[-1][0] == "extra_args"


def test_a_value_is_converted_as_ansible_converts_it_and_a_wrong_one_names_the_variable():
    values = settings.resolve("sglang", {"tp_size": "4", "port": 30001.0, "enable_metrics": "no",
                                         "mem_fraction_static": "0.8", "gpus": ["0", 1]})
    assert (values["tp_size"], values["port"], values["enable_metrics"]) == (4, 30001, False)
    assert values["mem_fraction_static"] == 0.8 and values["gpus"] == [0, 1]
    with pytest.raises(InvalidInput, match=r"sglang_server_tp_size must be a whole number, not str 'eight'"):
        settings.resolve("sglang", {"tp_size": "eight"})
    with pytest.raises(InvalidInput, match=r"vllm_server_gpus item 1 must be a whole number"):
        settings.resolve("vllm", {"gpus": [0, "x"]})
    with pytest.raises(InvalidInput, match=r"sglang_server_supervisor must be one of '', 'systemd', 'process'"):
        settings.resolve("sglang", {"supervisor": "runit"})
    with pytest.raises(InvalidInput, match=r"sglang_server_tp_size must be a whole number, not bool"):
        settings.resolve("sglang", {"tp_size": True})


def test_a_setting_of_another_engine_is_refused_naming_it():
    with pytest.raises(InvalidInput, match=r"sglang_server_max_num_seqs: no such setting for sglang"):
        settings.resolve("sglang", {"max_num_seqs": 4})


def test_computed_defaults_follow_the_engine_and_the_other_settings():
    sglang = settings.resolve("sglang", {"port": 31000})
    assert sglang["instance"] == "sglang-31000" and sglang["log_dir"] == "/var/log/sglang"
    assert sglang["release_patterns"] == list(registry.get("sglang").kill_patterns) and sglang["release_engine"] == []
    vllm = settings.resolve("vllm", {})
    assert (vllm["port"], vllm["instance"], vllm["release_engine"], vllm["release_patterns"]) == (
        8000, "vllm-8000", ["vllm"], [])
    # A default list is a fresh copy: changing one server's does not change the next one's.
    vllm["extra_args"].append("--x")
    assert settings.resolve("vllm", {})["extra_args"] == []


def test_the_server_dict_and_server_plan_options():
    spec = settings.server(registry.get("vllm"), {"model_path": "/m", "state": "planned", "speculative": {},
                                                  "speculative_config": {"method": "ngram"}, "ready_timeout": 5})
    assert (spec["engine"], spec["title"], spec["vars_prefix"]) == ("vllm", "vLLM", "vllm_server_")
    assert spec["speculative"] is None and spec["speculative_on"] is True
    options = settings.plan_options(spec)
    assert options["state"] == "started" and options["engine"] == "vllm"
    # Only what server_plan reads, and only this engine's own flags.
    assert "ready_timeout" not in options and "mem_fraction_static" not in options
    assert options["speculative_config"] == {"method": "ngram"}
    base = settings.server(registry.get("sglang"), {"model_path": "/m"})
    assert base["speculative_on"] is False


def test_given_from_reads_the_prefixed_variables_only():
    variables = {"sglang_server_port": "{{ 1 }}", "vllm_server_port": 9, "sglang_server_unknown": 1}
    assert settings.given_from("sglang", variables, lambda v: v + "!") == {"port": "{{ 1 }}!"}


@pytest.mark.parametrize("engine", [e for e in ENGINES if registry.get(e).server_role])
def test_the_role_files_are_the_table(engine):
    """The generated argument spec and defaults hold every row with its type and default."""
    role = "%s/roles/%s_server" % (REPO, engine)
    with open(role + "/meta/argument_specs.yml", encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    with open(role + "/defaults/main.yml", encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    rows = settings.settings_for(engine)
    assert list(options) == list(defaults) == ["%s_server_%s" % (engine, s.name) for s in rows]
    for setting in rows:
        name = "%s_server_%s" % (engine, setting.name)
        assert options[name]["type"] == setting.type
        assert options[name].get("default") == settings.shown_default(setting, engine), name
        assert defaults[name] == settings.role_default(setting, engine), name


def test_the_speculative_keys_are_an_argument_spec():
    """server_plan's `speculative` suboptions: the algorithm defaults to EAGLE3, the drafter is required."""
    spec = settings.speculative_spec()
    assert list(spec) == [s.name for s in settings.SPECULATIVE]
    checked = ArgumentSpecValidator(spec).validate({"draft_model_path": "/d", "num_steps": 3})
    assert not checked.error_messages
    assert checked.validated_parameters == {"algorithm": "EAGLE3", "draft_model_path": "/d", "num_steps": 3,
                                            "eagle_topk": None, "num_draft_tokens": None}
    assert any("draft_model_path" in m for m in ArgumentSpecValidator(spec).validate({}).error_messages)
