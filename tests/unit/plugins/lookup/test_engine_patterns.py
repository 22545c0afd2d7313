# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine_patterns lookup: the kill patterns of the engines named, refusals that say what to
give. Run by `ansible` on localhost once (the lookup as a playbook reaches it), the rest in process."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.gpufleet.serving.plugins.lookup.engine_patterns import LookupModule
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import engine_patterns
from tests.support.ansible import ansible_env
from tests.support.paths import REPO, VENV_BIN


def test_the_patterns_of_the_engines_named():
    for name in registry.names():
        assert LookupModule().run([name]) == engine_patterns([name])
    both = LookupModule().run(registry.names())
    assert set(both) >= set(engine_patterns([registry.names()[0]]))


def test_no_engine_and_an_unknown_engine_are_refused():
    with pytest.raises(AnsibleLookupError, match="engine_patterns: name at least one engine, e.g. query"):
        LookupModule().run([])
    with pytest.raises(AnsibleLookupError, match="^engine_patterns: .*tgi"):
        LookupModule().run(["tgi"])


def test_a_play_gets_the_same_patterns(tmp_path):
    expr = "{{ query('gpufleet.serving.engine_patterns', '%s') }}" % registry.DEFAULT
    out = subprocess.run([os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "ansible.builtin.debug",
                          "-a", json.dumps({"msg": expr}), "-t", str(tmp_path)],
                         cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads((tmp_path / "localhost").read_text())["msg"] == engine_patterns([registry.DEFAULT])
