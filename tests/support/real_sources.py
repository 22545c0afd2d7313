# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the real engines' sources are, for the tests that read them (never import them).

$GPUFLEET_REAL_SGLANG / $GPUFLEET_REAL_VLLM (a directory holding `sglang/` or `vllm/`, e.g. a
`pip install --no-deps --target DIR sglang==0.5.23`), else the distribution installed in this
interpreter, else build/sglang-real (`make setup`) or build/vllm-real (`make setup-vllm`; `make test`
runs both). Without them the cases skip, unless GPUFLEET_REQUIRE_REAL_SOURCES=1 (tests/run_all.sh,
so CI) turns the skip into a failure: there, a check against the real wheel never goes quietly.
Used by tests/unit/plugins/module_utils/: _server/test_log.py, _engines/test_sglang.py and
test_vllm.py, _bench/test_accept.py and _bench/workload/test_formats.py; and tests/sim/test_vllm_sim.py.
"""
import importlib.metadata
import os
import pathlib
import re

import pytest

from tests.support.paths import REPO as _REPO

REPO = pathlib.Path(_REPO)

# The versions the collection is tested against (requirements-sglang.txt, requirements-vllm.txt).
TESTED = {"sglang": "0.5.23", "vllm": "0.33.0"}


def package_dir(name):
    """(directory of the package's sources, version) or (None, reason)."""
    override = os.environ.get("GPUFLEET_REAL_" + name.upper())
    if override:
        return package_dir_at(pathlib.Path(override), name)
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        return pathlib.Path(dist.locate_file(name)), dist.version
    # `make setup` installs the pinned real sglang here (requirements-sglang.txt, --no-deps);
    # `make setup-vllm` unpacks the pinned vLLM's sources (requirements-vllm.txt).
    build = REPO / "build" / ("%s-real" % name)
    if (build / name).is_dir():
        return package_dir_at(build, name)
    return None, "%s is not installed (%s; or set GPUFLEET_REAL_%s to a --target install)" % (
        name, "make setup" if name == "sglang" else "make setup-vllm", name.upper())


def package_dir_at(root, name):
    infos = sorted(root.glob("%s-*.dist-info" % name))
    version = infos[-1].name[len(name) + 1:-len(".dist-info")] if infos else None
    if version is None and (root / name / "_version.py").is_file():
        # A tree unpacked without its dist-info: vLLM writes `__version__ = version = '0.33.0'`.
        found = re.search(r"^__version__ = version = '([^']+)'", (root / name / "_version.py").read_text(), re.M)
        version = found.group(1) if found else None
    return root / name, version


def missing(reason):
    """Skip for REASON, or fail where the real sources are required (GPUFLEET_REQUIRE_REAL_SOURCES=1)."""
    if os.environ.get("GPUFLEET_REQUIRE_REAL_SOURCES", "") not in ("", "0"):
        pytest.fail("the real sources are required here (GPUFLEET_REQUIRE_REAL_SOURCES): %s" % reason)
    pytest.skip(reason)


def sources(name):
    found, version = package_dir(name)
    if found is None or not found.is_dir():
        missing(version if found is None else "no %s sources at %s" % (name, found))
    return found, version


def vllm_sources():
    """The vLLM tree, skipped unless it is the tested version (GPUFLEET_REAL_VLLM, build/vllm-real)."""
    root, version = sources("vllm")
    if version != TESTED["vllm"]:
        missing("vllm sources at %s are version %s, not %s" % (root, version, TESTED["vllm"]))
    return root
