"""The collection's execution-environment metadata, read the way ansible-builder reads it.

meta/execution-environment.yml names the runtime needs (meta/ee-requirements.txt, lower
bounds) and the system packages (meta/ee-bindep.txt). ansible-builder's own `introspect`
reads them from build/collections (the checkout, as an installed collection), and
`create` turns docs/examples/execution-environment/ into a build context; neither needs a
container engine.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from simlib import fleet_cli, kit_cli  # sim/ is on sys.path (tests/conftest.py)

from tests.support import paths

REPO = Path(paths.REPO)
META = REPO / "meta"
EXAMPLE = REPO / "docs" / "examples" / "execution-environment"
# Developers' tools: pinned in requirements*.txt, never part of an execution environment.
DEV_ONLY = {"ansible-core", "ansible-lint", "molecule", "antsibull-changelog", "pytest", "ruff",
            "pytest-timeout", "hypothesis", "setproctitle", "ansible-builder"}


def requirement_lines(path):
    return [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()
            if line.split("#", 1)[0].strip()]


def dist(requirement):
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def bindep_names(platform):
    """Package names of ee-bindep.txt that apply on `platform` (dpkg or rpm)."""
    names = []
    for line in requirement_lines(META / "ee-bindep.txt"):
        name, unused, selector = line.partition("[")
        if not selector or "platform:%s" % platform in selector:
            names.append(name.strip())
    return names


def builder():
    found = shutil.which("ansible-builder", path=paths.VENV_BIN) or shutil.which("ansible-builder")
    if not found:
        pytest.skip("ansible-builder is not installed (requirements-common.txt pins it; make setup installs it)")
    return found


def run(argv, **kwargs):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          check=False, **kwargs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_metadata_points_at_runtime_files_only():
    ee = yaml.safe_load((META / "execution-environment.yml").read_text())
    assert ee["dependencies"] == {"python": "meta/ee-requirements.txt", "system": "meta/ee-bindep.txt"}
    reqs = requirement_lines(META / "ee-requirements.txt")
    assert {dist(r) for r in reqs} == {"psutil", "nvidia-ml-py", "prometheus_client", "matplotlib"}
    # Lower bounds only: an exact pin would clash with another collection's in the same EE.
    assert all(">=" in r and "==" not in r for r in reqs), reqs
    assert not {dist(r) for r in reqs} & DEV_ONLY


def test_the_lower_bounds_are_not_above_the_developers_pins():
    pins = {dist(r): r.split("==", 1)[1] for r in requirement_lines(REPO / "requirements-common.txt") if "==" in r}
    for req in requirement_lines(META / "ee-requirements.txt"):
        low = tuple(int(x) for x in req.split(">=", 1)[1].split("."))
        assert low <= tuple(int(x) for x in pins[dist(req)].split(".")), (req, pins[dist(req)])


def test_bindep_names_every_tool_the_simulated_fleet_checks_for():
    # The Debian package of each tool sim_fleet's check asks for (its error names them).
    wanted = {pkg for unused, pkg in fleet_cli.TOOLS + (kit_cli.CC,)}
    assert wanted <= set(bindep_names("dpkg")), wanted - set(bindep_names("dpkg"))
    assert {"openssh-clients", "openssh-server", "tini", "gcc", "util-linux"} <= set(bindep_names("rpm"))


def test_introspect_finds_the_runtime_needs_and_no_developer_pin():
    out = run([builder(), "introspect", "--sanitize", paths.COLLECTIONS])
    data = yaml.safe_load(out[out.index("---"):])
    ours = [line.split("#", 1)[0].strip() for line in data["python"] if "gpufleet.serving" in line]
    assert ours == requirement_lines(META / "ee-requirements.txt")
    assert not {dist(r) for r in data["python"]} & DEV_ONLY, data["python"]
    system = [line.split("#", 1)[0].strip() for line in data["system"] if "gpufleet.serving" in line]
    assert system == requirement_lines(META / "ee-bindep.txt")


def test_the_documented_definition_builds_a_context(tmp_path):
    context = tmp_path / "context"
    run([builder(), "create", "-f", str(EXAMPLE / "execution-environment.yml"), "-c", str(context),
         "--output-filename", "Containerfile"], cwd=tmp_path)
    containerfile = (context / "Containerfile").read_text()
    definition = yaml.safe_load((EXAMPLE / "execution-environment.yml").read_text())
    assert "ARG EE_BASE_IMAGE=\"%s\"" % definition["images"]["base_image"]["name"] in containerfile
    # The collection is installed from the definition's requirements.yml, and its own
    # meta/execution-environment.yml is read at build time (introspect, then bindep and pip).
    assert re.search(r"ansible-galaxy collection install .*-r requirements\.yml", containerfile), containerfile
    assert "introspect" in containerfile and "install-from-bindep" in containerfile
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert [c["name"] for c in galaxy["collections"]] == ["gpufleet.serving"]
    assert os.access(context / "_build" / "scripts" / "introspect.py", os.R_OK)
