"""The fake kit's side of gpu_release's reset_stuck: architecture and NVLink as nvidia-ml-py reads
them, memory stuck with no process, and sim/bin/nvidia-smi's reset with nvidia-smi(1)'s refusals."""
import json
import os
import subprocess
import sys

import pytest
from simlib import fakegpu

from tests.support.paths import REPO

SMI = os.path.join(REPO, "sim", "bin", "nvidia-smi")
READ = r'''
import json, sys
import pynvml
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import nvlink_probe
pynvml.nvmlInit()
out = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    rec = nvlink_probe.read(pynvml, i)
    rec["used_mib"] = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2).used >> 20
    rec["processes"] = len(pynvml.nvmlDeviceGetComputeRunningProcesses(h))
    out.append(rec)
print(json.dumps(out))
'''


def read(root):
    env = dict(os.environ, **fakegpu.env(root))
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    cp = subprocess.run([sys.executable, "-c", READ], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def smi(root, *args):
    env = dict(os.environ, **fakegpu.env(root))
    return subprocess.run([SMI] + list(args), env=env, capture_output=True, text=True, timeout=60, check=False)


def test_topology_and_stuck_memory_as_pynvml_reads_them(root):
    fakegpu.set_nvlink(root, range(4), arch="hopper", nvswitch=True)
    fakegpu.set_nvlink(root, [4, 5, 6], arch="ampere", pairs=[(4, 5), (5, 6)])
    fakegpu.stick(root, 1, 900)
    got = read(root)
    assert got[0]["arch"] == 9 and len(got[0]["links"]) == 18 and {x["remote"] for x in got[0]["links"]} == {"switch"}
    assert got[5]["arch"] == 7 and [(x["remote"], x["pci_bus_id"]) for x in got[5]["links"]] == [
        ("gpu", fakegpu.pci_bus_id(4)), ("gpu", fakegpu.pci_bus_id(6))]
    assert got[7]["arch"] == 10 and got[7]["links"] is None  # a PCIe board: NOT_SUPPORTED
    assert (got[1]["used_mib"], got[1]["processes"]) == (900, 0)
    assert fakegpu.read_status(root)[1]["used_mib"] == 900


@pytest.mark.parametrize("args, rc, words", [
    (["-r", "-i", "4"], 255, "with NVLink connections to it must be reset with it: %s" % fakegpu.pci_bus_id(5)),
    (["-r", "-i", "4,5"], 0, "All done."),
    (["-r", "-i", "0"], 0, "GPU %s was successfully reset." % fakegpu.pci_bus_id(0)),  # Hopper on NVSwitch: alone
    (["-r", "-i", "2"], 255, "GPU %s: In use by another client" % fakegpu.pci_bus_id(2)),
    (["-q"], 2, "only the GPU reset"),
])
def test_nvidia_smi_reset(root, args, rc, words):
    fakegpu.set_nvlink(root, range(4), arch="hopper", nvswitch=True)
    fakegpu.set_nvlink(root, [4, 5], arch="ampere", pairs=[(4, 5)])
    for gpu in (0, 4, 5):
        fakegpu.stick(root, gpu, 500)
    holding = fakegpu.hold(root, [2], 100)
    try:
        out = smi(root, *args)
    finally:
        holding.close()
    assert out.returncode == rc and words in out.stdout + out.stderr, out
    cleared = [g for g in (0, 4, 5) if fakegpu.read_health(root, g)["stuck_mib"] == 0]
    assert cleared == ([] if rc else [int(g) for g in args[-1].split(",")])
