"""The sglang_server role reads the host's sglang version before a launch and warns, not fails.

roles/_server/tasks/version.yml runs in ansible-playbook on localhost, with sglang_server's
mapping of its variables (tests/support/server_role.py) and
`sglang_server_python` set to: the simulated hosts' interpreter (its sglang is 0.5.23, the
tested version: no warning), a stand-in interpreter that reports another version, and an
interpreter without sglang (version unknown). The play goes on in every case; only an entry
point that does not exist stops it, naming the variable that fixes it.
"""
import os

import pytest
import yaml

from tests.support.ansible import run_playbook
from tests.support.paths import PYTHON, REPO
from tests.support.server_role import play

TESTED = yaml.safe_load(open(os.path.join(REPO, "roles", "sglang_server", "vars", "main.yml")))[
    "sglang_server_tested_version"]

TASKS = """\
    - name: Compose the launch (the entry point)
      ansible.builtin.include_role:
        name: gpufleet.serving._server
        tasks_from: plan
        public: true
      vars:
        sglang_server_model_path: /models/m
        sglang_server_supervisor: process
    - name: Compare
      ansible.builtin.include_role:
        name: gpufleet.serving._server
        tasks_from: version
        public: true
    - name: Still here
      ansible.builtin.debug:
        msg: "VERSION-READ={{ _server_plan.engine_version }}"
"""


def run(tmp_path, python, rc=0, **more):
    playbook = tmp_path / "version.yml"
    playbook.write_text(play("sglang_server", "Read the host's sglang version as the role does before a launch", TASKS))
    extra = {"sglang_server_python": python, "sglang_server_entry_point": python}
    extra.update(more)
    proc = run_playbook(playbook, extra)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    return proc.stdout


def test_tested_version_is_the_pin():
    with open(os.path.join(REPO, "requirements-sglang.txt")) as handle:
        assert "sglang==%s\n" % TESTED in handle.read()


def test_the_tested_version_gives_no_warning(tmp_path):
    out = run(tmp_path, os.path.join(REPO, "sim", "bin", "sglang-python"))
    assert "VERSION-READ=%s" % TESTED in out
    assert "WARNING:" not in out


@pytest.mark.parametrize("reported", ["0.5.9", "0.6.0"])
def test_another_version_warns_and_goes_on(tmp_path, reported):
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho %s\n" % reported)
    fake.chmod(0o755)
    out = run(tmp_path, str(fake))
    assert "WARNING: localhost has sglang %s (%s), the collection is tested against sglang %s" % (
        reported, fake, TESTED) in out
    assert "VERSION-READ=%s" % reported in out


def test_an_unreadable_version_warns_and_goes_on(tmp_path):
    out = run(tmp_path, PYTHON)  # the project's interpreter has no sglang installed
    assert "WARNING: localhost has sglang unknown" in out
    assert "Reading it failed: ModuleNotFoundError: No module named 'sglang'" in out
    assert "VERSION-READ=unknown" in out


def test_a_missing_entry_point_fails_with_the_fix(tmp_path):
    python = str(tmp_path / "venv" / "bin" / "python")
    out = run(tmp_path, PYTHON, rc=2, sglang_server_python=python, sglang_server_entry_point="")
    assert "The SGLang entry point %s does not exist" % (tmp_path / "venv" / "bin" / "sglang") in out
    assert "Set sglang_server_entry_point" in out
