# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine registry: each engine defines every field, well formed; modules take their
engine choices from it; the old `flavor` option keeps working, deprecated.

The command lines the speculative settings compose are parsed by the engines' own parsers
in tests/sim/test_argv_corpus.py (real SGLang) and tests/sim/test_vllm_argv_corpus.py
(vLLM's flag set); tests/unit/plugins/module_utils/_server/test_log.py checks the log
rules and the kill set against the wheels.
"""

from __future__ import annotations

import ast
import importlib
import re

import pytest
from ansible.module_utils.common.arg_spec import ModuleArgumentSpecValidator

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import engine as _engine
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_spec
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import patterns
from ansible_collections.gpufleet.serving.plugins.module_utils._server import log
from tests.support import doc_fragments
from tests.support.engines import toyserve_engine

# The test-only engine is held to the same rules: an engine file that passes here is what
# tests/integration/test_new_engine.py runs through the playbooks.
REGISTERED = registry.engines()
ENGINES = REGISTERED + (toyserve_engine.ENGINE,)
IDS = [e.name for e in ENGINES]
MODULES = "ansible_collections.gpufleet.serving.plugins.modules."
# Fields an engine may leave empty: what it does not have (vLLM has no model-info or server-info path).
MAY_BE_EMPTY = {"speculative_methods", "model_flag", "model_info_paths", "server_info_paths", "server_info_keys",
                "server_info_accept_length", "causes", "per_request_acceptance", "speculative_config_option",
                "check_speculative_config"}


class _Captured(Exception):
    pass


def argument_spec(name, monkeypatch):
    """The argument spec module NAME's main() hands to AnsibleModule (main stops there)."""
    module = importlib.import_module(MODULES + name)
    seen = {}

    def capture(**kwargs):
        seen.update(kwargs)
        raise _Captured()

    monkeypatch.setattr(module, "AnsibleModule", capture)
    with pytest.raises(_Captured):
        module.main()
    return seen["argument_spec"]


def documented_options(name):
    return doc_fragments.documentation(name)["options"]  # the doc fragments it extends included


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_every_field_is_defined(engine):
    for name in _engine.fields():
        value = getattr(engine, name)
        assert value is not None or name in MAY_BE_EMPTY, name
        if isinstance(value, (str, tuple)) and name not in MAY_BE_EMPTY:
            assert len(value) > 0, name


def test_names_are_unique_and_the_first_is_the_default():
    assert len(set(registry.names())) == len(REGISTERED) and registry.DEFAULT == registry.names()[0]
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in registry.names())  # role prefix NAME_server_
    assert registry.get("") is registry.get(registry.DEFAULT)
    with pytest.raises(InvalidInput, match="unknown engine 'tgi'; known engines: %s" % ", ".join(registry.names())):
        registry.get("tgi")


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_option_table_rows_are_server_plan_options(engine, monkeypatch):
    spec = argument_spec("server_plan", monkeypatch)
    derived = {s.name for s in server_spec.SETTINGS if s.derive is not None}  # computed from `nodes` by compose()
    for option, flag, kind in engine.option_flags:
        assert (option in spec or option in derived) and kind in _engine.FLAG_KINDS, option
        assert (flag is None) == (kind == "args") and (flag is None or flag.startswith("--")), option
    assert [o for o, unused, unused in engine.option_flags][:3] == ["tp_size", "host", "port"]


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_speculative_options_are_rows_of_the_table(engine):
    if not engine.speculative_methods:
        with pytest.raises(InvalidInput, match="no speculative decoding"):
            engine.speculative_options({})
        return
    spec = {"algorithm": "EAGLE3", "draft_model_path": "/d", "num_steps": 2, "eagle_topk": 1, "num_draft_tokens": 3}
    options = engine.speculative_options(spec)
    rows = {o for o, unused, unused in engine.option_flags}
    assert options and set(options) <= rows
    assert set(engine.speculative_numbers(spec)) == {"num_steps", "eagle_topk", "num_draft_tokens"}


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_kill_set_matches_its_own_titles_only(engine):
    regexes = patterns.compile_patterns(list(engine.kill_patterns))  # also the breadth checks
    assert all(patterns.matches_any(regexes, t) for t in engine.process_titles)
    for other in ENGINES:
        if other is not engine:
            assert not any(patterns.matches_any(regexes, t) for t in other.process_titles), other.name


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_log_rules_are_well_formed(engine):
    assert {r.phase for r in engine.phase_rules} <= set(log.PHASES)
    assert all(r.unsure is None or r.unsure in log.PHASES for r in engine.phase_rules)
    assert all(c.rank in (1, 2, 3, 4) and c.kind for c in engine.causes)
    pattern, fmt, prefix = engine.log_timestamp
    assert pattern.groups == 1 and "%" in fmt
    assert all(text for kind, text, unused in log.CAUSES), "a cause kind without its text"


@pytest.mark.parametrize("engine", ENGINES, ids=IDS)
def test_metric_names_carry_the_prefix_and_the_probe_parses(engine):
    formula = engine.accept_length
    for name in (engine.generated_tokens, engine.finished_requests) + formula.numerator + formula.denominator:
        assert name.startswith(engine.metric_prefix), name
    ast.parse(engine.version_probe())
    assert '"%s"' % engine.package in engine.version_probe()


def test_every_engine_is_in_each_list_the_code_derives():
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench import run
    from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.engine_settings import engine_settings
    from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare
    assert list(patterns.ENGINE_PATTERNS) == registry.names()
    assert run.GENERATION_COUNTERS == tuple(e.generated_tokens for e in REGISTERED)
    assert run.REQUEST_COUNTERS == tuple(e.finished_requests for e in REGISTERED)
    assert set(compare.VARIANTS) == set(registry.names()) | {n + "+eagle3" for n in registry.names()}
    for engine in REGISTERED:
        settings = engine_settings(engine.name)
        assert (settings["title"], settings["url"]) == (engine.title, "http://127.0.0.1:%d" % engine.default_port)


# module, option, the values besides the engines' names (before, after)
CHOICES = [("server_plan", "engine", [], []), ("drafter_check", "engine", [], []),
           ("server_wait", "engine", ["auto"], []), ("llm_benchmark", "engine", ["auto"], []),
           ("gpu_release", "engine", [], [patterns.ANY_ENGINE])]


@pytest.mark.parametrize("module, option, before, after", CHOICES, ids=[c[0] for c in CHOICES])
def test_module_choices_are_the_registry_names(module, option, before, after, monkeypatch):
    """The argument spec reads the registry; its DOCUMENTATION (which ansible-test compares with the
    argument spec) lists the same names, so a new engine fails here until the docs name it."""
    expected = before + registry.names() + after
    assert argument_spec(module, monkeypatch)[option]["choices"] == expected
    assert documented_options(module)[option]["choices"] == expected


@pytest.mark.parametrize("module, required", [("server_wait", {"url": "http://127.0.0.1:1"}),
                                              ("llm_benchmark", {"base_url": "http://127.0.0.1:1"})])
def test_flavor_still_works_as_a_deprecated_alias(module, required, monkeypatch):
    spec = argument_spec(module, monkeypatch)
    result = ModuleArgumentSpecValidator(spec).validate(dict(required, flavor="vllm"))
    assert not result.error_messages and result.validated_parameters["engine"] == "vllm"
    assert [(d["msg"], d["version"], d["collection_name"]) for d in result._deprecations] == [
        ("Alias 'flavor' is deprecated. See the module docs for more information", "2.0.0", "gpufleet.serving")]
    assert documented_options(module)["engine"]["aliases"] == ["flavor"]
    plain = ModuleArgumentSpecValidator(spec).validate(dict(required, engine="vllm"))
    assert not plain._deprecations and plain.validated_parameters["engine"] == "vllm"
