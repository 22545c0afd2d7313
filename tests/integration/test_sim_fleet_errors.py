# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpufleet.serving.sim_fleet refuses wrong variables and a bad interpreter before anything starts.

The checkout's collection (build/collections); the installed copy is
test_sim_fleet_installed.py's. Not-root and a missing Debian package are
tests/sim/test_kit.py's (they cannot be provoked as root here).
"""
import json
import os
import subprocess

import pytest

from tests.support import paths
from tests.support.ansible import ansible_env

CASES = [
    ({"sim_fleet_dir": "relative/fleet"}, "sim_fleet_dir must be absolute (relative/fleet)"),
    ({"sim_fleet_faults": [{"kind": "warmup_crash", "host": "sim-h5"}]},
     "each fault's host one of sim-h1, sim-h2"),
    ({"sim_fleet_faults": [{"kind": "gpu_held", "host": "sim-h1", "gpu": 8, "mib": 100}]},
     "and gpu below 8"),
    ({"sim_fleet_faults": [{"kind": "gpu_held", "host": "sim-h1"}]}, "gpu, mib"),
    ({"sim_fleet_gpu_model": "a100"}, "value of sim_fleet_gpu_model must be one of"),
    ({"sim_fleet_sglang": {"speed": 2}}, "speed"),
    ({"sim_fleet_python": "/nonexistent/python"},
     "sim_fleet_python '/nonexistent/python' is not an absolute path to an executable"),
]


@pytest.mark.parametrize("variables, message", CASES, ids=[str(i) for i in range(len(CASES))])
def test_refused_before_anything_starts(tmp_path, variables, message):
    if os.geteuid() != 0 and "sim_fleet_python" in variables:
        pytest.skip("as non-root the root check comes first")
    fleet_dir = tmp_path / "fleet"
    given = {"sim_fleet_state": "up", "sim_fleet_dir": str(fleet_dir),
             "sim_fleet_cache_dir": str(tmp_path / "cache"), **variables}
    (tmp_path / "vars.json").write_text(json.dumps(given))
    proc = subprocess.run([paths.ansible_tool("ansible-playbook"), "gpufleet.serving.sim_fleet",
                           "-e", "@%s" % (tmp_path / "vars.json")], cwd=paths.REPO, env=ansible_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr, proc.stdout[-3000:]
    assert not fleet_dir.exists() and not (tmp_path / "cache").exists()
