"""The fake NVML's health model (ROOT/nvml/health/gpu<N>) as the real nvidia-ml-py reads it.

Each call is made through pynvml's own wrapper, so the C signatures and structures
(nvmlFieldValue_t, nvmlGpuFabricInfo_v2/_v3, the retired-pages size protocol) are checked
against nvidia-ml-py's ctypes declarations, not against ours.
"""
import json
import os
import subprocess
import sys

import pytest
from simlib import fakegpu

from tests.support.paths import SIMCTL

PY = sys.executable
READ = r'''
import json, sys
import pynvml as n
def ask(call, *args):
    try:
        return call(*args)
    except n.NVMLError as e:
        return "error %d" % e.value
def fabric(h, struct):
    info = struct()
    got = ask(n.nvmlDeviceGetGpuFabricInfoV, h, n.byref(info))
    return got if isinstance(got, str) else [info.state, info.status]
def field(h, fid):
    v = n.nvmlDeviceGetFieldValues(h, [fid])[0]
    return [v.nvmlReturn, v.valueType, v.value.uiVal]
n.nvmlInit()
out = {}
for i in [int(a) for a in sys.argv[1:]]:
    h = n.nvmlDeviceGetHandleByIndex(i)
    out[i] = {
        "persistence": ask(n.nvmlDeviceGetPersistenceMode, h),
        "ecc": ask(n.nvmlDeviceGetEccMode, h),
        "dbe_volatile": ask(n.nvmlDeviceGetTotalEccErrors, h, 1, 0),
        "dbe_aggregate": ask(n.nvmlDeviceGetTotalEccErrors, h, 1, 1),
        "sbe_volatile": ask(n.nvmlDeviceGetTotalEccErrors, h, 0, 0),
        "retired_pending": ask(n.nvmlDeviceGetRetiredPagesPendingStatus, h),
        "retired_sbe_v2": ask(n.nvmlDeviceGetRetiredPages_v2, h, 0),
        "retired_dbe_v1": ask(n.nvmlDeviceGetRetiredPages, h, 1),
        "remapped": ask(n.nvmlDeviceGetRemappedRows, h),
        "recovery": field(h, n.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION),
        "other_field": field(h, n.NVML_FI_DEV_RESET_STATUS),
        "inforom": ask(n.nvmlDeviceValidateInforom, h),
        "fabric_v2": fabric(h, n.c_nvmlGpuFabricInfoV_t),
        "fabric_v3": fabric(h, n.c_nvmlGpuFabricInfo_v3_t),
        "pcie": [ask(n.nvmlDeviceGetCurrPcieLinkWidth, h), ask(n.nvmlDeviceGetMaxPcieLinkWidth, h),
                 ask(n.nvmlDeviceGetCurrPcieLinkGeneration, h), ask(n.nvmlDeviceGetMaxPcieLinkGeneration, h)],
        "clocks": [ask(n.nvmlDeviceGetCurrentClocksEventReasons, h),
                   ask(n.nvmlDeviceGetCurrentClocksThrottleReasons, h)],
        "temperature": [ask(n.nvmlDeviceGetTemperature, h, 0), ask(n.nvmlDeviceGetTemperatureThreshold, h, 1),
                        ask(n.nvmlDeviceGetTemperatureThreshold, h, 0), ask(n.nvmlDeviceGetTemperatureThreshold, h, 3)],
        "bus": n.nvmlDeviceGetPciInfo(h).busId,
    }
print(json.dumps(out))
'''


def read(root, *gpus):
    env = dict(os.environ, **fakegpu.env(root))
    cp = subprocess.run([PY, "-c", READ] + [str(g) for g in gpus], env=env,
                        capture_output=True, text=True, timeout=60, check=False)
    assert cp.returncode == 0, cp.stderr
    return {int(k): v for k, v in json.loads(cp.stdout).items()}


def test_a_healthy_gpu_as_pynvml_reads_it(root):
    g = read(root, 0)[0]
    assert g == {
        "persistence": 1, "ecc": [1, 1], "dbe_volatile": 0, "dbe_aggregate": 0, "sbe_volatile": 0,
        # page retirement is NOT_SUPPORTED (3) until the model gives it, as on Ampere and later
        "retired_pending": "error 3", "retired_sbe_v2": "error 3", "retired_dbe_v1": "error 3",
        "remapped": [0, 0, 0, 0], "recovery": [0, 1, 0], "other_field": [3, 0, 0],
        "inforom": None, "fabric_v2": "error 3", "fabric_v3": "error 3",
        "pcie": [16, 16, 5, 5], "clocks": [1, 1], "temperature": [35, 87, 92, "error 3"],
        "bus": fakegpu.pci_bus_id(0),
    }


def test_every_named_fault_reaches_pynvml(root):
    faults = ["ecc_dbe", "retired_pending", "retired_limit", "remap_pending", "remap_failure",
              "recovery_action", "persistence_off", "inforom_corrupt"]
    assert set(faults) < set(fakegpu.HEALTH_FAULTS)
    for gpu, fault in enumerate(faults):
        fakegpu.inject_health(root, gpu, fault)
    got = read(root, *range(8))
    assert got[0]["dbe_volatile"] == 2 and got[0]["dbe_aggregate"] == 2 and got[0]["sbe_volatile"] == 0
    assert got[1]["retired_pending"] == 1 and got[1]["retired_sbe_v2"] == []
    assert [p["address"] for p in got[2]["retired_sbe_v2"]][:2] == [0x100000, 0x200000]
    assert len(got[2]["retired_sbe_v2"]) == 40 and len(got[2]["retired_dbe_v1"]) == 23  # pynvml's two-call protocol
    assert got[3]["remapped"] == [1, 0, 1, 0]
    assert got[4]["remapped"] == [0, 0, 0, 1]
    assert got[5]["recovery"] == [0, 1, 1]
    assert got[6]["persistence"] == 0
    assert got[7]["inforom"] == "error 14"  # NVML_ERROR_CORRUPTED_INFOROM


def test_fabric_pcie_thermal_and_ecc_off(root):
    fakegpu.set_health(root, 0, fabric_state=3, fabric_status=0)
    fakegpu.set_health(root, 1, fabric_state=3, fabric_status=999)
    fakegpu.inject_health(root, 2, "fabric_not_started")
    fakegpu.inject_health(root, 3, "pcie_downgraded")
    fakegpu.inject_health(root, 4, "thermal")
    fakegpu.inject_health(root, 5, "ecc_off")
    got = read(root, *range(6))
    assert got[0]["fabric_v2"] == got[0]["fabric_v3"] == [3, 0]
    assert got[1]["fabric_v3"] == [3, 999]
    assert got[2]["fabric_v2"] == [1, 0]
    assert got[3]["pcie"] == [8, 16, 5, 5]
    assert got[4]["clocks"] == [0x40, 0x40] and got[4]["temperature"][:2] == [88, 87]
    assert got[5]["ecc"] == [0, 0] and got[5]["dbe_volatile"] == "error 3"


def test_a_fault_appears_and_clears_while_a_client_runs(root):
    fakegpu.inject_health(root, 0, "remap_pending")
    assert read(root, 0)[0]["remapped"] == [1, 0, 1, 0]
    fakegpu.set_health(root, 0, clear=True)
    assert read(root, 0)[0]["remapped"] == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="unknown health key typo"):
        fakegpu.set_health(root, 0, typo=1)


def test_simctl_health_and_xid(root):
    def simctl(*args):
        return subprocess.run([PY, SIMCTL, "gpu"] + list(args), capture_output=True, text=True, timeout=60,
                              check=False)
    cp = simctl("health", root, "2", "thermal", "pcie_width=4")
    assert cp.returncode == 0, cp.stderr
    shown = json.loads(cp.stdout)
    assert shown["clocks_event_reasons"] == 0x40 and shown["pcie_width"] == 4 and shown["persistence"] == 1
    assert read(root, 2)[2]["pcie"][0] == 4
    bad = simctl("health", root, "2", "no_such_fault")
    assert bad.returncode == 2 and "unknown health fault 'no_such_fault'" in bad.stderr
    cp = simctl("xid", root, "3", "79", "GPU has fallen off the bus.")
    assert cp.returncode == 0, cp.stderr
    with open(fakegpu.kernel_log(root)) as f:
        lines = f.read().splitlines()
    assert lines[0].endswith("Linux version 6.8.0 (simulated host)")
    assert "NVRM: Xid (PCI:0000:48:00): 79, pid=4242, name=python3, GPU has fallen off the bus." in lines[-1]
    assert fakegpu.pci_bus_id(3) == "00000000:48:00.0"
