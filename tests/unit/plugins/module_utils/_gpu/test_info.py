# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_gpu/info.py: gpu_info's facts gathered on the fake GPU kit, a real holder process on two GPUs.

The fake libnvidia-ml.so.1 is found through LD_LIBRARY_PATH, read at process start, so
gpu_facts runs in a fresh interpreter with the environment from fakegpu.env(root).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from simlib import fakegpu

from tests.support.paths import COLLECTIONS, SIM

FACTS = ("import json, sys\n"
         "from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.info import gpu_facts\n"
         "from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import COMMON_ARGS\n"
         "params = {k: v.get('default') for k, v in COMMON_ARGS.items()}\n"
         "params.update(json.loads(sys.argv[1]))\n"
         "print(json.dumps(gpu_facts(params)))\n")
HOLD = ("import sys; sys.path.insert(0, %r); from simlib import fakegpu; "
        "fakegpu.hold(sys.argv[1], [int(g) for g in sys.argv[2].split(',')], int(sys.argv[3])); "
        "print('ready', flush=True); sys.stdin.read()" % SIM)


@pytest.fixture
def root(tmp_path):
    path = str(tmp_path / "gpu")
    fakegpu.init(path, gpus=4)
    return path


def facts(root, **params):
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, **fakegpu.env(root))
    out = subprocess.run([sys.executable, "-c", FACTS, json.dumps(params)], env=env, capture_output=True,
                         text=True, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_facts_name_the_holder_and_its_memory_on_the_gpus_it_holds(root, own_procs):
    holder = own_procs.python(HOLD, root, "1,3", 1200)
    assert holder.stdout.readline().strip() == "ready"
    out = facts(root)
    assert out["changed"] is False and out["gpu_count"] == 4 and out["driver_version"] == fakegpu.DEFAULT_DRIVER
    by_index = {g["index"]: g for g in out["gpus"]}
    assert sorted(by_index) == [0, 1, 2, 3]
    for index in (1, 3):
        assert by_index[index]["used_mib"] == 1200.0
        assert [h["pid"] for h in by_index[index]["holders"]] == [holder.pid]
    for index in (0, 2):
        assert by_index[index]["used_mib"] == 0.0 and by_index[index]["holders"] == []


def test_selected_gpus_only_and_a_protected_holder_says_why(root, own_procs):
    holder = own_procs.python(HOLD, root, "2", 800, "gf-keep-me")
    assert holder.stdout.readline().strip() == "ready"
    out = facts(root, gpus=[2], protect=["gf-keep-me"])
    (gpu,) = out["gpus"]
    assert gpu["index"] == 2
    (entry,) = gpu["holders"]
    assert (entry["pid"], entry["protected"]) == (holder.pid, "protect pattern"), entry


def test_a_gpu_the_host_lacks_is_refused(root):
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, **fakegpu.env(root))
    out = subprocess.run([sys.executable, "-c", FACTS, json.dumps({"gpus": [0, 9]})], env=env,
                         capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode != 0
    assert "gpus: 9 not present on this host, which has 4 GPUs (indices 0-3)" in out.stderr
