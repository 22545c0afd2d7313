# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One fact, one place: the lists docs show are generated, and fail here when stale.

Engine names and kill patterns (the registry, _engines/), protected GPU daemons
(_gpu/protect.py DAEMONS) and role variables (roles/*/meta/argument_specs.yml)
are written once; scripts/gen_docs.py copies them between markers.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import patterns as _patterns
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import protect as _protect

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(REPO, "scripts", "gen_docs.py")


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", GEN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_docs_are_up_to_date():
    run = subprocess.run([sys.executable, GEN, "--check"], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr


def test_the_check_fails_on_a_stale_block():
    gen = _gen()
    text = ("  # BEGIN GENERATED gpu-daemons (scripts/gen_docs.py)\n"
            "  - 'The GPU system daemons: C(nvidia-persistenced).'\n"
            "  # END GENERATED gpu-daemons\n")
    fresh = gen.render(text)
    assert fresh != text and "C(gpu-feature-discovery)" in fresh and "C(dcgmi)" in fresh
    assert gen.render(fresh) == fresh


def test_the_generator_reads_the_constants_the_code_uses():
    gen = _gen()
    assert gen.engine_patterns() == _patterns.ENGINE_PATTERNS
    assert tuple(gen.daemons()) == _protect.DAEMONS


def test_every_generated_block_is_in_place():
    """Removing a marker pair would silently stop the check: each block appears where expected."""
    expected = {
        "plugins/doc_fragments/gpu.py": ["gpu-daemons"],
        "plugins/modules/gpu_release.py": ["engine-patterns", "engine-choices"],
        "plugins/modules/server_plan.py": ["engine-names"],
        "plugins/modules/drafter_check.py": ["engine-names"],
        "plugins/doc_fragments/endpoint.py": ["engine-names-auto"],
        "plugins/lookup/engine_patterns.py": ["engine-patterns"],
        "roles/sglang_server/meta/argument_specs.yml": ["server-options-sglang"],
        "roles/sglang_server/defaults/main.yml": ["server-defaults-sglang"],
        "roles/vllm_server/meta/argument_specs.yml": ["server-options-vllm"],
        "roles/vllm_server/defaults/main.yml": ["server-defaults-vllm"],
        "roles/vllm_server/vars/main.yml": ["speculative-methods-vllm"],
        "roles/eagle_drafter/meta/argument_specs.yml": ["engine-names"],
        "playbooks/compare_engines.yml": ["compare-variants"],
        "docs/gpu_release.md": ["gpu-daemons", "engine-patterns"],
        "roles/sglang_server/README.md": ["role-variables-sglang_server"],
        "roles/eagle_drafter/README.md": ["role-variables-eagle_drafter"],
        "roles/host_setup/README.md": ["role-variables-host_setup"],
        "roles/router/README.md": ["role-variables-router"],
    }
    for rel, names in expected.items():
        with open(os.path.join(REPO, rel), encoding="utf-8") as handle:
            text = handle.read()
        for name in names:
            assert "BEGIN GENERATED %s " % name in text and "END GENERATED %s" % name in text, (rel, name)


@pytest.mark.parametrize("role", ["sglang_server", "eagle_drafter", "host_setup", "router"])
def test_role_readme_table_lists_every_argument_spec_option(role):
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    with open(os.path.join(REPO, "roles", role, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    for name in options:
        assert "| `%s` |" % name in readme, name


def test_the_role_kill_set_default_is_the_engine_constant():
    """The role's documented default is SGLang's kill set, and so is its generated defaults file's."""
    with open(os.path.join(REPO, "roles/sglang_server/meta/argument_specs.yml"), encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)["argument_specs"]["main"]["options"]["sglang_server_release_patterns"]
    assert spec["default"] == _patterns.ENGINE_PATTERNS["sglang"]
    with open(os.path.join(REPO, "roles/sglang_server/defaults/main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert defaults["sglang_server_release_patterns"] == _patterns.ENGINE_PATTERNS["sglang"]


def test_module_docs_parse_with_the_fragment():
    """The modules' DOCUMENTATION is YAML, and the shared options come from the fragment only."""
    for rel in ("plugins/modules/gpu_release.py", "plugins/modules/gpu_info.py"):
        with open(os.path.join(REPO, rel), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        doc = next(ast.literal_eval(n.value) for n in tree.body
                   if isinstance(n, ast.Assign) and n.targets[0].id == "DOCUMENTATION")
        parsed = yaml.safe_load(doc)
        assert "gpufleet.serving.gpu" in parsed["extends_documentation_fragment"]
        assert not {"gpus", "devices", "nvml_timeout", "v1_reserve_mib", "protect"} & set(parsed["options"] or {})


def test_engine_patterns_in_order_and_unknown_refused():
    assert _patterns.engine_patterns(["sglang", "vllm"]) == (
        _patterns.ENGINE_PATTERNS["sglang"] + _patterns.ENGINE_PATTERNS["vllm"])
    with pytest.raises(InvalidInput, match="unknown engine 'trt'; known engines: %s" % ", ".join(sorted(_patterns.ENGINE_PATTERNS))):
        _patterns.engine_patterns(["trt"])


def test_any_is_every_engine_once():
    everything = [p for pats in _patterns.ENGINE_PATTERNS.values() for p in pats]
    assert _patterns.engine_patterns(["any"]) == everything
    assert _patterns.engine_patterns(["vllm", "any"]) == _patterns.ENGINE_PATTERNS["vllm"] + [
        p for name, pats in _patterns.ENGINE_PATTERNS.items() if name != "vllm" for p in pats]
    assert _patterns.engine_patterns([]) == []
    with pytest.raises(InvalidInput, match=r"known engines: %s \(or any: every one\)" % ", ".join(sorted(_patterns.ENGINE_PATTERNS))):
        _patterns.engine_patterns(["vLLM"])


def test_gpu_release_engine_option_documents_its_argument_spec():
    """The documented choices are the argument spec's (engine_choices()), generated from ENGINE_PATTERNS."""
    with open(os.path.join(REPO, "plugins/modules/gpu_release.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    doc = yaml.safe_load(next(ast.literal_eval(n.value) for n in tree.body
                              if isinstance(n, ast.Assign) and n.targets[0].id == "DOCUMENTATION"))
    engine = doc["options"]["engine"]
    assert engine["choices"] == _patterns.engine_choices() == list(_patterns.ENGINE_PATTERNS) + ["any"]
    assert (engine["type"], engine["elements"]) == ("list", "str") and "default" not in engine
    assert any("VLLM::" in line for line in engine["description"])


def test_the_lookup_returns_the_engine_constant():
    from ansible.errors import AnsibleLookupError

    from ansible_collections.gpufleet.serving.plugins.lookup.engine_patterns import LookupModule
    lookup = LookupModule()
    assert lookup.run(["sglang", "vllm"], variables={}) == _patterns.engine_patterns(["sglang", "vllm"])
    assert lookup.run(["any"], variables={}) == _patterns.engine_patterns(list(_patterns.ENGINE_PATTERNS))
    with pytest.raises(AnsibleLookupError, match="name at least one engine"):
        lookup.run([], variables={})
    with pytest.raises(AnsibleLookupError, match="unknown engine 'trt'"):
        lookup.run(["trt"], variables={})


@pytest.mark.parametrize("engine, titles, other", [
    ("sglang", ["python3 -m sglang.launch_server --tp 8", "sglang::scheduler_TP0", "sglang::detokenizer",
                "/venv/bin/python3 /venv/bin/sglang serve --model-path /m"], "VLLM::EngineCore"),
    ("vllm", ["/usr/bin/python3 -m vllm.entrypoints.openai.api_server --model /m", "VLLM::EngineCore",
              "VLLM::Worker_TP3", "/venv/bin/python3 /venv/bin/vllm serve /m -tp 8"], "sglang::scheduler_TP0"),
])
def test_each_engine_kill_set_passes_the_breadth_checks_and_matches_its_own(engine, titles, other):
    regexes = _patterns.compile_patterns(_patterns.ENGINE_PATTERNS[engine])
    assert all(_patterns.matches_any(regexes, t) for t in titles)
    assert not _patterns.matches_any(regexes, other)
