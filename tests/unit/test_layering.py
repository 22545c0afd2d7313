# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The architecture of docs/design.md ("Packages and what may import what"), checked on the source.

Every import under plugins/ is read with ast (no code is run) and its source and target
are reduced to a layer: a module_utils package (`_engines`, `_proc`, `_gpu`, `_server`, `_bench`, `_router`), a
module_utils file (`_errors`, `_deps`, `_files`, `_safe_text`, `_http`, `_prom`), `plugin_utils`, `modules`,
`action`, `filter`. ALLOWED says which layers each may import; a new package or plugin
type must be added here (and to docs/design.md) before it can be used.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"
PREFIX = "ansible_collections.gpufleet.serving.plugins."

BASE = {"_errors"}  # what every module_utils layer may use
LEAF = BASE | {"_files", "_safe_text", "_prom"}
MODULE_UTILS = {"_errors", "_deps", "_files", "_safe_text", "_http", "_prom", "_engines", "_proc", "_gpu", "_server", "_bench", "_router"}
ALLOWED = {
    "_errors": set(),
    "_deps": BASE,
    "_files": BASE,
    "_safe_text": BASE,
    "_http": BASE,
    "_prom": BASE,
    "_engines": BASE,
    "_proc": BASE,
    "_gpu": LEAF | {"_proc", "_deps", "_engines"},
    "_server": LEAF | {"_proc", "_http", "_engines"},
    "_bench": LEAF | {"_http", "_engines"},
    "_router": BASE | {"_http", "_prom"},
    "plugin_utils": MODULE_UTILS | {"plugin_utils"},
    "modules": MODULE_UTILS,
    "action": MODULE_UTILS | {"plugin_utils"},
    "filter": MODULE_UTILS | {"plugin_utils"},
    "lookup": MODULE_UTILS | {"plugin_utils"},
    "doc_fragments": set(),
}
# The only Ansible code module_utils and modules may import: what exists on a managed host.
HOST_SIDE = MODULE_UTILS | {"modules"}


def layer(parts):
    """The layer of a path below plugins/ given as parts, e.g. ('module_utils', '_gpu', 'release')."""
    if parts[0] == "module_utils":
        return parts[1]
    return parts[0]


def sources(plugins=PLUGINS):
    for path in sorted(plugins.rglob("*.py")):
        parts = path.relative_to(plugins).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) == 2 and parts[0] == "module_utils":
            continue
        yield path, layer(parts)


def imports(path):
    """(line, module name, relative level) of every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            yield node.lineno, module, node.level
            # `from ...module_utils import _errors` / `from ..._gpu import release as _release`
            for alias in node.names:
                yield node.lineno, module + "." + alias.name, node.level


def violations(plugins=PLUGINS):
    out = []
    for path, src in sources(plugins):
        rel = path.relative_to(plugins.parent)
        for line, name, level in imports(path):
            if level:
                out.append("%s:%d relative import %r: write it absolute (%s...)" % (rel, line, name, PREFIX))
                continue
            if name == "tests" or name.startswith(("tests.", "ansible_collections.gpufleet.serving.tests")):
                out.append("%s:%d imports the tests: %s" % (rel, line, name))
                continue
            if src in HOST_SIDE and name.startswith("ansible.") and not name.startswith("ansible.module_utils"):
                out.append("%s:%d %s runs on the managed host and may import only ansible.module_utils, not %s"
                           % (rel, line, src, name))
                continue
            if not name.startswith(PREFIX):
                continue
            parts = name[len(PREFIX):].split(".")
            if len(parts) < 2:
                continue  # `from ...plugins import module_utils`: the names imported are checked
            dst = layer(parts)
            if dst == src:
                continue
            if dst not in ALLOWED[src]:
                out.append("%s:%d %s may not import %s (%s)" % (rel, line, src, dst, name))
    return sorted(set(out))


def test_every_layer_is_known():
    unknown = sorted({src for unused, src in sources()} - set(ALLOWED))
    assert not unknown, "add these to ALLOWED and to docs/design.md: %s" % unknown


def test_imports_follow_the_layers():
    found = violations()
    assert not found, "\n".join(found)


@pytest.mark.parametrize("src, dst, allowed", [
    ("_proc", "_gpu", False),
    ("_gpu", "_proc", True),
    ("_bench", "_server", False),
    ("_server", "_http", True),
    ("_errors", "_proc", False),
    ("_engines", "_server", False),
    ("_server", "_engines", True),
    ("modules", "plugin_utils", False),
    ("action", "plugin_utils", True),
])
def test_rules_read_as_documented(src, dst, allowed):
    """The table says what docs/design.md says (a guard against a rule loosened by accident)."""
    assert (dst in ALLOWED[src]) is allowed
    for name in MODULE_UTILS:
        assert "plugin_utils" not in ALLOWED[name] and "modules" not in ALLOWED[name]


def test_the_checker_sees_a_violation(tmp_path):
    """A bad file is reported (the checker is not blind)."""
    fake = tmp_path / "plugins"
    (fake / "module_utils" / "_proc").mkdir(parents=True)
    (fake / "module_utils" / "_proc" / "bad.py").write_text(
        "from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import release\n"
        "from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import files\n"
        "from ansible.plugins.action import ActionBase\n"
        "from . import table\n")
    (fake / "modules").mkdir()
    (fake / "modules" / "bad_module.py").write_text(
        "from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge\n"
        "import tests.support\n")
    found = violations(fake)
    assert any("_proc may not import _gpu" in f for f in found), found
    assert any("_proc may not import plugin_utils" in f for f in found), found
    assert any("may import only ansible.module_utils" in f for f in found), found
    assert any("relative import" in f for f in found), found
    assert any("modules may not import plugin_utils" in f for f in found), found
    assert any("imports the tests" in f for f in found), found


def unannotated(path):
    """Public functions and methods (of public classes) of a file lacking a parameter or return annotation."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out = []

    def visit(body, prefix, in_class):
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, prefix + node.name + ".", True)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.name.startswith("_") and node.name != "__init__":
                continue
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
            params = node.args.posonlyargs + node.args.args
            if in_class and not static:
                params = params[1:]  # self / cls
            params += node.args.kwonlyargs + [a for a in (node.args.vararg, node.args.kwarg) if a]
            missing = [a.arg for a in params if a.annotation is None]
            if node.returns is None:
                missing.append("return")
            if missing:
                out.append("%s:%d %s%s: %s" % (path.relative_to(REPO), node.lineno, prefix, node.name, ", ".join(missing)))

    visit(tree.body, "", False)
    return out


def test_module_utils_public_functions_have_type_hints():
    found = [line for path in sorted((PLUGINS / "module_utils").rglob("*.py")) for line in unannotated(path)]
    assert not found, "\n".join(found)


def _defined(path):
    """Top-level names a collection file defines or imports (what `from it import X` can take)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Try):  # `try: import psutil / except ImportError: ...`
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    names.update((a.asname or a.name).split(".")[0] for a in sub.names)
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


def unresolved(plugins=PLUGINS):
    """`from <collection module> import NAME` where that module does not define NAME: a
    module that would fail at import on the host (no unit test imports plugins/modules)."""
    out = []
    for path, unused in sources(plugins):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX)):
                continue
            base = plugins.joinpath(*node.module[len(PREFIX):].split("."))
            for alias in node.names:
                if base.joinpath(alias.name + ".py").is_file() or base.joinpath(alias.name).is_dir():
                    continue  # a submodule
                source = base.with_suffix(".py")
                if not source.is_file() or alias.name not in _defined(source):
                    out.append("%s:%d %s has no %s" % (path.relative_to(plugins.parent), node.lineno, node.module, alias.name))
    return out


def test_every_imported_name_exists():
    found = unresolved()
    assert not found, "\n".join(found)


def test_the_name_checker_sees_a_missing_name(tmp_path):
    fake = tmp_path / "plugins"
    (fake / "module_utils").mkdir(parents=True)
    (fake / "module_utils" / "_errors.py").write_text("class GpuFleetError(Exception):\n    pass\n")
    (fake / "modules").mkdir()
    (fake / "modules" / "m.py").write_text(
        "from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, fail_from\n")
    assert unresolved(fake) == ["plugins/modules/m.py:1 %smodule_utils._errors has no fail_from" % PREFIX]


def collection_file_reads(plugins=PLUGINS):
    """Where a plugin reaches for the collection's own files at run time: its path from `__file__` (the way to
    roles/ or another plugin's source) or a call given a path under roles/. What a plugin needs of a role or of
    another plugin lives in a Python table it imports (e.g. _engines/settings.py, _bench/options.py)."""
    out = []
    for path in sorted(plugins.rglob("*.py")):
        rel = path.relative_to(plugins.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Name) and node.id == "__file__":
                out.append("%s:%d finds the collection from __file__" % (rel, node.lineno))
            if isinstance(node, ast.Call):
                for arg in node.args:
                    for part in ast.walk(arg):
                        text = part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else ""
                        if text == "roles" or text.startswith("roles/") or "/roles/" in text:
                            out.append("%s:%d opens a path under roles/: %r" % (rel, node.lineno, text))
    return sorted(set(out), key=lambda line: (line.split(":")[0], int(line.split(":")[1].split(" ")[0])))


def test_plugins_read_no_role_files_at_run_time():
    found = collection_file_reads()
    assert not found, "\n".join(found)


def test_the_file_read_checker_sees_a_read(tmp_path):
    fake = tmp_path / "plugins" / "plugin_utils"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text(
        "import os\n"
        "ROOT = os.path.dirname(os.path.dirname(__file__))\n"
        "SPEC = open(os.path.join(ROOT, 'roles', '_fleet', 'meta', 'argument_specs.yml'))\n"
        "OTHER = open(ROOT + '/roles/x/defaults/main.yml')\n")
    found = collection_file_reads(tmp_path / "plugins")
    assert [f.split(" ", 1)[0] for f in found] == ["plugins/plugin_utils/bad.py:2", "plugins/plugin_utils/bad.py:3",
                                                   "plugins/plugin_utils/bad.py:4"], found
