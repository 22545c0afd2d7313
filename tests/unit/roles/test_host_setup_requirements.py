"""host_setup installs what the modules check for, at the bounds an execution environment gets.

Three files name the modules' libraries: plugins/module_utils/_deps.py (what a module checks
for and names when missing), roles/host_setup/vars/main.yml (what the role installs on a host)
and meta/ee-requirements.txt (what an execution environment installs).
"""
import re
from pathlib import Path

import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils import _deps
from tests.support import paths

REPO = Path(paths.REPO)


def ee_requirements():
    lines = [line.split("#", 1)[0].strip() for line in (REPO / "meta" / "ee-requirements.txt").read_text().splitlines()]
    return {re.split(r"[<>=!~ ]", line, maxsplit=1)[0]: line for line in lines if line}


def test_the_role_installs_every_library_the_modules_check_for_at_the_ee_bounds():
    role = yaml.safe_load((REPO / "roles" / "host_setup" / "vars" / "main.yml").read_text())["host_setup_requirements"]
    assert set(role) == set(_deps.LIBRARIES)
    assert role == {dist: ee_requirements()[dist] for dist in role}


def test_the_missing_library_message_names_the_role_that_installs_them():
    assert _deps.SETUP_ROLE == "gpufleet.serving.host_setup"
    assert (REPO / "roles" / _deps.SETUP_ROLE.rsplit(".", 1)[1] / "meta" / "argument_specs.yml").is_file()
