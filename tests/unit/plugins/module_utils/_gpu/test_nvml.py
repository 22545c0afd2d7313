# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVML: memory arithmetic on hand-made records; NvmlSession on the fake GPU kit.

The fake libnvidia-ml.so.1 is found through LD_LIBRARY_PATH, which the dynamic
loader reads at process start, so each session runs in a fresh interpreter
(tests/support/scripts/nvml_probe.py) with the environment from fakegpu.env(root).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from simlib import fakegpu

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import nvml
from tests.support.paths import COLLECTIONS, SCRIPTS, SIM

MIB = 1024 * 1024
PROBE = os.path.join(SCRIPTS, "nvml_probe.py")


@pytest.mark.parametrize("rec, reserve, expected", [
    ({"memory_api": "v2", "total": 97887 * MIB, "used": 20000 * MIB, "reserved": 615 * MIB}, 1024,
     (20000.0, 615.0, 97887.0)),
    ({"memory_api": "v2", "total": 97887 * MIB, "used": 0, "reserved": 615 * MIB}, 1024, (0.0, 615.0, 97887.0)),
    ({"memory_api": "v2", "total": 1000 * MIB, "used": MIB // 2, "reserved": 0}, 1024, (0.5, 0.0, 1000.0)),
    # v1 `used` includes the reserve: an assumed one is taken off ...
    ({"memory_api": "v1", "total": 97887 * MIB, "used": (615 + 20000) * MIB, "reserved": None}, 1024,
     (19591.0, None, 97887.0)),
    ({"memory_api": "v1", "total": 97887 * MIB, "used": (615 + 20000) * MIB, "reserved": None}, 615,
     (20000.0, None, 97887.0)),
    # ... and an idle GPU never goes below zero
    ({"memory_api": "v1", "total": 97887 * MIB, "used": 615 * MIB, "reserved": None}, 1024, (0.0, None, 97887.0)),
    ({"memory_api": "v1", "total": 97887 * MIB, "used": 615 * MIB, "reserved": None}, 0, (615.0, None, 97887.0)),
])
def test_gpu_memory_mib(rec, reserve, expected):
    assert nvml.gpu_memory_mib(rec, v1_reserve_mib=reserve) == expected


def test_gpu_memory_mib_default_reserve_and_to_mib():
    rec = {"memory_api": "v1", "total": 2048 * MIB, "used": 1524 * MIB, "reserved": None}
    assert nvml.gpu_memory_mib(rec) == (500.0, None, 2048.0)
    assert nvml.DEFAULT_V1_RESERVE_MIB == 1024
    assert nvml.to_mib(None) is None
    assert nvml.to_mib(3 * MIB + MIB // 10) == 3.1


@pytest.mark.parametrize("msg, words", [
    ("NVML Shared Library Not Found", "libnvidia-ml.so.1 was not found"),
    ("Driver Not Loaded", "NVIDIA kernel driver is not loaded"),
    ("Unknown Error", "NVML failed to initialise: Unknown Error"),
])
def test_init_messages(msg, words):
    assert words in nvml._init_message({"error": "init", "msg": msg})


# ---------------------------------------------------------------- on the fake kit

@pytest.fixture
def root(tmp_path):
    path = str(tmp_path / "gpu")
    fakegpu.init(path, gpus=8)
    return path


def probe_env(root, drop=()):
    env = dict(os.environ)
    env.update(fakegpu.env(root))
    env["PYTHONPATH"] = COLLECTIONS
    for key in drop:
        env.pop(key, None)
    return env


def probe(env, wall=10, **req):
    out = subprocess.run([sys.executable, PROBE, json.dumps(req)], env=env, capture_output=True,
                         text=True, timeout=wall, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


HOLD = ("import sys; sys.path.insert(0, %r); from simlib import fakegpu; "
        "fakegpu.hold(sys.argv[1], [int(g) for g in sys.argv[2].split(',')], int(sys.argv[3])); "
        "print('ready', flush=True); sys.stdin.read()" % SIM)


def test_session_reads_every_gpu(root):
    res = probe(probe_env(root), wall=5)
    assert (res["driver"], res["count"]) == (fakegpu.DEFAULT_DRIVER, 8)
    assert [g["index"] for g in res["gpus"]] == list(range(8))
    assert [g["minor"] for g in res["gpus"]] == list(range(8))
    g0 = res["gpus"][0]
    assert g0["memory_api"] == "v2" and g0["used"] == 0 and g0["reserved"] == 615 * MIB
    assert g0["total"] == fakegpu.DEFAULT_MEMORY_MIB * MIB
    assert g0["name"] == fakegpu.DEFAULT_NAME and g0["uuid"].startswith("GPU-")
    assert res["helper_alive_after_close"] is False


def test_session_sees_holder_and_selected_indices(root, own_procs):
    holder = own_procs.python(HOLD, root, "2,5", 1500)
    assert holder.stdout.readline().strip() == "ready"
    res = probe(probe_env(root), indices=[5, 2])
    by_index = {g["index"]: g for g in res["gpus"]}
    assert sorted(by_index) == [2, 5]
    for g in by_index.values():
        assert nvml.gpu_memory_mib(g) == (1500.0, 615.0, float(fakegpu.DEFAULT_MEMORY_MIB))
        assert {p["pid"] for p in g["processes"]} == {holder.pid}


def test_session_without_v2_falls_back_to_v1(root, own_procs):
    fakegpu.set_fault(root, "no_v2")
    holder = own_procs.python(HOLD, root, "1", 1000)
    assert holder.stdout.readline().strip() == "ready"
    res = probe(probe_env(root), indices=[0, 1])
    g0, g1 = res["gpus"]
    assert g0["memory_api"] == "v1" and g0["reserved"] is None
    assert g0["used"] == 615 * MIB                      # v1 includes the driver reserve
    assert nvml.gpu_memory_mib(g0) == (0.0, None, float(fakegpu.DEFAULT_MEMORY_MIB))
    assert nvml.gpu_memory_mib(g1, v1_reserve_mib=615) == (1000.0, None, float(fakegpu.DEFAULT_MEMORY_MIB))


def test_hang_at_init_times_out(root):
    fakegpu.set_fault(root, "hang")
    res = probe(probe_env(root), wall=20, **{"timeout": 1.0})
    assert res["error"] == "NvmlTimeout"
    assert "did not answer within 1.0 s while initialising NVML" in res["msg"]
    assert 1.0 <= res["elapsed"] < 5.0


def test_hang_during_snapshot_times_out_and_kills_helper(root):
    hang = fakegpu.fault_path(root, "hang")
    res = probe(probe_env(root), wall=20, **{"timeout": 1.0, "hang_after_init": hang})
    assert res["count"] == 8
    assert res["error"] == "NvmlTimeout"
    assert "while reading GPU memory and processes" in res["msg"]
    assert 1.0 <= res["elapsed"] < 5.0
    assert res["helper_alive_after_error"] is False


def test_lost_gpu_names_it(root):
    fakegpu.set_fault(root, "lost", 3)
    res = probe(probe_env(root))
    assert res["error"] == "NvmlError"
    assert "GPU 3:" in res["msg"] and "GPU is lost" in res["msg"]
    assert sorted(res["gpu_errors"]) == ["3"]
    # the other GPUs read fine
    assert "gpus" in probe(probe_env(root), indices=[0, 1, 2, 4, 5, 6, 7])


def test_missing_fake_root_gives_a_clear_init_error(root):
    res = probe(probe_env(root, drop=["FAKE_NVML_ROOT"]))
    assert res["error"] == "NvmlError"
    assert res["msg"].startswith("the NVIDIA kernel driver is not loaded on this host")
    assert "count" not in res


def test_missing_library_gives_a_clear_init_error(root):
    if subprocess.run(["sh", "-c", "ldconfig -p | grep -q libnvidia-ml.so.1"], check=False).returncode == 0:
        pytest.skip("a real libnvidia-ml.so.1 is installed here")
    res = probe(probe_env(root, drop=["LD_LIBRARY_PATH"]))
    assert res["error"] == "NvmlError"
    assert "libnvidia-ml.so.1 was not found" in res["msg"]
