# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/unit/plugins/ mirrors plugins/ file for file, both ways.

The unit test of plugins/<dir>/<path>/name.py is tests/unit/plugins/<dir>/<path>/test_name.py
(a leading underscore of the source's name is dropped: _errors.py -> test_errors.py), for every
source of module_utils, plugin_utils, modules, action, filter and lookup (doc_fragments hold
documentation only; __init__.py files are empty). Every test file there names a source that
exists, every directory there is a package (an empty __init__.py, as tests/__init__.py: two
test_plan.py in different directories import as different modules), and nothing else is there
but conftest.py files. Model: community.crypto's tests/unit/plugins/module_utils/_acme/.
"""

from __future__ import annotations

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"
TESTS = REPO / "tests" / "unit" / "plugins"
MIRRORED = ("module_utils", "plugin_utils", "modules", "action", "filter", "lookup")

# Sources without a unit test file of their own, each with the reason. Keep it short.
EXCEPTIONS: dict = {}


def mirror_path(source):
    """tests/unit/plugins/... path (relative to TESTS) of a plugins/... source (relative to PLUGINS)."""
    return source.parent / ("test_" + source.name.lstrip("_"))


def sources(root=PLUGINS):
    out = set()
    for top in MIRRORED:
        for path in (root / top).rglob("*.py"):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                out.add(path.relative_to(root))
    return out


def files_under(root=TESTS):
    return {p.relative_to(root) for p in root.rglob("test_*.py") if "__pycache__" not in p.parts}


def missing_tests(plugins=PLUGINS, tests=TESTS, exceptions=None):
    """Sources with no test file and no entry in `exceptions` (default: EXCEPTIONS)."""
    exceptions = EXCEPTIONS if exceptions is None else exceptions
    have = files_under(tests)
    return sorted(str(s) for s in sources(plugins) if mirror_path(s) not in have and str(s) not in exceptions)


def orphan_tests(plugins=PLUGINS, tests=TESTS):
    """Test files that name no source."""
    wanted = {mirror_path(s) for s in sources(plugins)}
    return sorted(str(t) for t in files_under(tests) if t not in wanted)


def test_every_source_has_its_test_file():
    missing = missing_tests()
    assert not missing, "write tests/unit/plugins/<same path>/test_<name>.py for: %s" % missing


def test_every_test_file_names_a_source():
    orphans = orphan_tests()
    assert not orphans, ("these test files under tests/unit/plugins/ name no plugins/ file of the same path: %s; "
                         "join them to the test file of the source they test" % orphans)


def test_the_exceptions_are_real_sources_still_without_a_test():
    have = files_under()
    stale = sorted(s for s in EXCEPTIONS if pathlib.Path(s) not in sources() or mirror_path(pathlib.Path(s)) in have)
    assert not stale, "remove these from EXCEPTIONS (gone, or tested now): %s" % stale


def test_every_directory_is_a_package_holding_only_tests():
    for directory in [TESTS] + [p for p in TESTS.rglob("*") if p.is_dir() and p.name != "__pycache__"]:
        assert (directory / "__init__.py").is_file(), "add an empty __init__.py to %s" % directory
        for path in directory.iterdir():
            if path.is_file():
                assert path.name in ("__init__.py", "conftest.py") or path.name.startswith("test_"), \
                    "%s is neither a test file nor a conftest.py: shared helpers go to tests/support/" % path


def _tree(root, files):
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")


@pytest.mark.parametrize("plugin_files, tests_, missing, orphans", [
    (["module_utils/_gpu/release.py", "module_utils/_gpu/__init__.py", "modules/gpu_release.py"],
     ["module_utils/_gpu/test_release.py", "modules/test_gpu_release.py"], [], []),
    (["module_utils/_errors.py", "action/server_wait.py"], ["module_utils/test_errors.py"],
     ["action/server_wait.py"], []),
    (["module_utils/_gpu/release.py"], ["module_utils/_gpu/test_release.py", "module_utils/test_release.py",
                                        "module_utils/_gpu/test_gone.py"],
     [], ["module_utils/_gpu/test_gone.py", "module_utils/test_release.py"]),
])
def test_the_check_finds_what_is_missing_both_ways(tmp_path, plugin_files, tests_, missing, orphans):
    plugins, tests = tmp_path / "plugins", tmp_path / "tests"
    _tree(plugins, plugin_files)
    _tree(tests, tests_)
    assert missing_tests(plugins, tests, {}) == missing
    assert orphan_tests(plugins, tests) == orphans
