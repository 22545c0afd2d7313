"""The supported ansible-core versions are the tested ones, stated alike everywhere.

requirements.txt pins the oldest (.venv), requirements-newest.txt the newest
(.venv-newest); meta/runtime.yml, the README and the Makefile's Python versions must agree
with them, and the ansible the tests drive (tests/support/paths.py) must be the one pinned:
the oldest by default, the newest under GPUFLEET_ANSIBLE_BIN (tests/run_all.sh's
playbooks-newest stage).
"""
import os
import re
import subprocess
from pathlib import Path

import yaml

from tests.support import paths

REPO = Path(paths.REPO)


def pin(requirements):
    text = (REPO / requirements).read_text()
    found = re.findall(r"^ansible-core==(\d+\.\d+\.\d+)\s*$", text, re.M)
    assert len(found) == 1, (requirements, found)
    return found[0]


def make_var(name):
    return re.search(r"^%s := (\S+)$" % name, (REPO / "Makefile").read_text(), re.M).group(1)


def minor(version):
    return tuple(int(x) for x in version.split(".")[:2])


def test_requires_ansible_is_the_oldest_tested():
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    assert runtime["requires_ansible"] == ">=" + pin("requirements.txt")


def test_newest_is_newer_than_oldest():
    assert minor(pin("requirements-newest.txt")) > minor(pin("requirements.txt"))
    assert minor(make_var("PY_NEWEST_VERSION")) > minor(make_var("PY_VERSION"))


def requirement_lines(name):
    return [line for line in (REPO / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def package(line):
    return re.split(r"[=<>!~\[ ;]", line, maxsplit=1)[0].lower()


def test_shared_pins_are_not_repeated():
    """Each venv's file holds its ansible-core and what runs on that venv alone (Galaxy's importer
    and the docsite build run on the oldest); every pin both need is in requirements-common.txt."""
    common = {package(line) for line in requirement_lines("requirements-common.txt")}
    own = {}
    for name in ("requirements.txt", "requirements-newest.txt"):
        lines = requirement_lines(name)
        assert "-r requirements-common.txt" in lines and "ansible-core==" + pin(name) in lines, name
        own[name] = {package(line) for line in lines if not line.startswith("-r")} - {"ansible-core"}
        assert not own[name] & common, "%s repeats pins of requirements-common.txt: %s" % (name, own[name] & common)
    shared = own["requirements.txt"] & own["requirements-newest.txt"]
    assert not shared, "pinned in both venvs' files; move to requirements-common.txt: %s" % shared
    assert not [line for line in requirement_lines("requirements-common.txt")
                if line.startswith("ansible-core")]


def test_readme_states_both():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Supported Ansible versions", 1)[1].split("\n## ", 1)[0]
    assert "**%s** (Python %s)" % (pin("requirements.txt"), make_var("PY_VERSION")) in section
    assert "**%s** (Python %s)" % (pin("requirements-newest.txt"), make_var("PY_NEWEST_VERSION")) in section


def test_the_ansible_under_test_is_the_pinned_one():
    newest = bool(os.environ.get(paths.ANSIBLE_BIN_ENV))
    out = subprocess.run([paths.ansible_tool("ansible"), "--version"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    core = re.search(r"\[core (\S+)\]", out).group(1)
    python = re.search(r"python version = (\d+\.\d+)", out).group(1)
    assert core == pin("requirements-newest.txt" if newest else "requirements.txt"), out
    assert python == make_var("PY_NEWEST_VERSION" if newest else "PY_VERSION"), out
