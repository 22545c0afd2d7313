# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine names live in the registry: outside plugins/module_utils/_engines/, plugins/ names an
engine only in documentation (DOCUMENTATION, EXAMPLES, RETURN, a table row's `doc=`, docstrings,
comments, the filters' YAML docs).

Every .py file under plugins/ is read with ast (no code runs): string constants and
identifiers that name an engine are reported unless they are documentation or in ALLOWED,
which lists each remaining use with its reason. An `if engine == "vllm"` fails here.

roles/ and playbooks/ hold no list of engine names (or of their variants, `vllm+eagle3`) except
between the markers of a block scripts/gen_docs.py writes from the registry: a YAML list or a
Jinja list literal of two or more names fails here, so a new engine cannot be left out of one.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"
REGISTRY = PLUGINS / "module_utils" / "_engines"
ENGINES = {"sglang", "vllm"}  # checked against the registry below
GENERATED = re.compile(r"^\s*(#|<!--) BEGIN GENERATED ([\w-]+).*?^\s*\1 END GENERATED \2.*?$", re.M | re.S)
JINJA_LIST = re.compile(r"\[\s*'([\w+]+)'\s*,\s*'([\w+]+)'")
ENGINE_NAME = re.compile(r"sglang|vllm", re.IGNORECASE)
DOC_BLOCKS = {"DOCUMENTATION", "EXAMPLES", "RETURN"}

# (file relative to plugins/, the text found): what must stay, and why.
ALLOWED = {
    # server_plan's deprecated return value keeps its name until 2.0.0 (engine_version replaces it).
    ("module_utils/_server/plan.py", "sglang_version"),
    # A real scheduler title as the example of a pattern without nested repetition, in the message of
    # the bounded match; _proc sits below the registry in the layers (tests/unit/test_layering.py).
    ("module_utils/_proc/match_bounded.py", "sglang::scheduler"),
    # The router's executable (not an engine) that the release never signals; _gpu sits below the
    # router registry (_router) in the layers.
    ("module_utils/_gpu/protect.py", "sglang-router"),
}


def _docstrings(tree):
    """ids of the docstring constants of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _doc_blocks(tree):
    """ids of every node inside an assignment to DOCUMENTATION, EXAMPLES or RETURN, or inside a `doc=`
    argument (a table row's documentation, generated into a DOCUMENTATION block: _bench/options.py)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOC_BLOCKS for t in node.targets):
            out.update(id(n) for n in ast.walk(node.value))
        if isinstance(node, ast.keyword) and node.arg == "doc":
            out.update(id(n) for n in ast.walk(node.value))
    return out


def _names(node):
    """The identifiers a node introduces or uses."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name]
    return []


def engine_names_in(source, rel):
    """[(line, text)] of every engine name in SOURCE's code (not its documentation)."""
    tree = ast.parse(source)
    skip = _docstrings(tree) | _doc_blocks(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        texts = _names(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts = [node.value]
        for text in texts:
            for word in re.findall(r"[\w.:/-]*(?:sglang|vllm)[\w.:/-]*", text, re.IGNORECASE):
                if (rel, word) not in ALLOWED:
                    found.append((getattr(node, "lineno", 0), word))
    return found


# Files that name a benchmark tool, not an engine: the dataset formats are named after the tool
# whose loader they follow (sglang.bench_serving's custom, vllm bench serve's custom), and a
# file of either format is read the same whichever engine serves the requests.
TOOL_NAMED = {"module_utils/_bench/workload/formats.py"}
# The router registry names router products (sglang-router, binaries smg / sglang-router), whose
# names contain an engine's; the router modules take their kind choices from it.
ROUTER_REGISTRY = PLUGINS / "module_utils" / "_router"


def plugin_sources():
    for path in sorted(PLUGINS.rglob("*.py")):
        if (REGISTRY not in path.parents and ROUTER_REGISTRY not in path.parents
                and path.relative_to(PLUGINS).as_posix() not in TOOL_NAMED):
            yield path, path.relative_to(PLUGINS).as_posix()


def test_engine_names_only_in_the_registry_and_documentation():
    found = ["%s:%d %s" % (rel, line, word) for path, rel in plugin_sources()
             for line, word in engine_names_in(path.read_text(encoding="utf-8"), rel)]
    assert not found, "name the engine through the registry (plugins/module_utils/_engines/):\n" + "\n".join(found)


def test_every_allowed_use_is_still_there():
    """An entry of ALLOWED that matches nothing is stale: remove it."""
    for rel, word in ALLOWED:
        assert word in (PLUGINS / rel).read_text(encoding="utf-8"), (rel, word)


def test_non_python_files_under_plugins_are_documentation():
    """The filters' YAML files are their documentation; no other kind of file may name an engine."""
    for path in PLUGINS.rglob("*"):
        if path.is_file() and path.suffix != ".py" and ENGINE_NAME.search(path.read_text(encoding="utf-8")):
            assert path.parent.name == "filter" and path.suffix == ".yml", path


@pytest.mark.parametrize("source, expected", [
    ('if engine == "vllm":\n    pass\n', [(1, "vllm")]),
    ("def sglang_argv():\n    '''SGLang's argv.'''\n", [(1, "sglang_argv")]),
    ("x = call(flavor='sglang')  # SGLang\n", [(1, "sglang")]),
    ("DOCUMENTATION = '''engine: sglang'''\n# vllm\n", []),
    ('"""The SGLang and vLLM servers."""\n', []),
])
def test_the_check_sees_code_and_skips_documentation(source, expected):
    assert engine_names_in(source, "x.py") == expected


def test_the_name_list_here_is_the_registry():
    from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
    assert set(registry.names()) == ENGINES


def _is_engine(word):
    return isinstance(word, str) and word.split("+")[0] in ENGINES


def engine_lists_in(text):
    """Lists of two or more engine names or variants in a YAML file's TEXT, outside generated blocks."""
    text = GENERATED.sub("", text)
    found = [list(m.groups()) for m in JINJA_LIST.finditer(text) if all(_is_engine(w) for w in m.groups())]
    stack = [yaml.safe_load(text)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            # Galaxy's search tags are documentation: they say what a role is about.
            stack.extend(v for k, v in node.items() if k != "galaxy_tags")
        elif isinstance(node, list):
            if sum(_is_engine(item) for item in node) >= 2:
                found.append(node)
            stack.extend(node)
    return found


def test_roles_and_playbooks_list_engines_only_in_generated_blocks():
    found = ["%s: %s" % (path.relative_to(REPO), names) for top in ("roles", "playbooks")
             for path in sorted((REPO / top).rglob("*.yml")) for names in engine_lists_in(path.read_text(encoding="utf-8"))]
    assert not found, "generate these from the registry (scripts/gen_docs.py):\n" + "\n".join(found)


@pytest.mark.parametrize("text, found", [
    ("choices: [sglang, vllm]\n", [["sglang", "vllm"]]),
    ("x: \"{{ v | default(['sglang+eagle3', 'vllm+eagle3']) }}\"\n", [["sglang+eagle3", "vllm+eagle3"]]),
    ("a:\n  # BEGIN GENERATED names (scripts/gen_docs.py)\n  choices: [sglang, vllm]\n  # END GENERATED names\n", []),
    ("galaxy_tags: [gpu, sglang, vllm]\ndefault: vllm\n", []),
])
def test_the_list_check_sees_lists_outside_generated_blocks(text, found):
    assert engine_lists_in(text) == found
