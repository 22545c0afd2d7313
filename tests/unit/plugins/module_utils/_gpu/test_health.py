# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_health's verdicts: each check on hand-made NVML readings (DCGM's thresholds at their edges), then
each fault injected into the fake GPU kit and read through the real nvidia-ml-py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from simlib import fakegpu

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import health
from tests.support.ansible import run_module
from tests.support.paths import COLLECTIONS

NOT_SUPPORTED = {"err": "Not Supported", "code": 3}


def healthy(**changes):
    """The readings of a healthy H200 (health_probe.read's shape), with `changes` applied."""
    readings = {
        "persistence_mode": {"ok": 1}, "ecc_mode": {"ok": [1, 1]}, "ecc_dbe_volatile": {"ok": 0},
        "retired_pages_pending": NOT_SUPPORTED, "retired_pages_sbe": NOT_SUPPORTED,
        "retired_pages_dbe": NOT_SUPPORTED, "remapped_rows": {"ok": [0, 0, 0, 0]},
        "recovery_action": {"ok": 0}, "inforom": {"ok": True},
        "fabric": {"ok": {"state": 3, "status": 0, "health_mask": 0}},
        "pcie_width": {"ok": 16}, "pcie_width_max": {"ok": 16}, "pcie_gen": {"ok": 1}, "pcie_gen_max": {"ok": 5},
        "clocks_event_reasons": {"ok": 0x1}, "temperature": {"ok": 31}, "temperature_slowdown": {"ok": 87},
    }
    readings.update(changes)
    return {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-0", "pci_bus_id": "00000000:18:00.0",
            "readings": readings}


def judged(xids=(), **changes):
    return health.judge_gpu(healthy(**changes), list(xids))


def test_a_healthy_gpu_passes_with_unsupported_checks_named():
    gpu = judged()
    assert gpu["verdict"] == "pass" and gpu["reasons"] == []
    assert gpu["checks"]["retired_pages"]["verdict"] == "not_supported"
    assert gpu["checks"]["retired_pages_pending"]["verdict"] == "not_supported"
    # the generation of an idle GPU is shown, never judged
    assert gpu["checks"]["pcie_link"] == {"verdict": "pass", "reason": "x16 of x16, gen 1 of 5",
                                          "value": {"width": 16, "width_max": 16, "generation": 1,
                                                    "generation_max": 5}}
    assert gpu["checks"]["xid"]["reason"] == "none since boot"


@pytest.mark.parametrize("name, changes, verdict, words", [
    ("persistence_mode", {"persistence_mode": {"ok": 0}}, "warn", "persistence mode is disabled"),
    ("ecc_mode", {"ecc_mode": {"ok": [0, 0]}}, "warn", "ECC is disabled"),
    ("ecc_mode", {"ecc_mode": {"ok": [1, 0]}}, "warn", "disabled after the next reset"),
    ("ecc_dbe_volatile", {"ecc_dbe_volatile": {"ok": 1}}, "fail", "1 uncorrectable (double-bit) ECC error"),
    ("retired_pages_pending", {"retired_pages_pending": {"ok": 1}, "ecc_dbe_volatile": {"ok": 2}}, "fail",
     "pending (takes effect at the next reset), after 2 double-bit ECC errors"),
    ("retired_pages", {"retired_pages_sbe": {"ok": 40}, "retired_pages_dbe": {"ok": 23}}, "fail",
     "63 retired pages, DCGM's limit is 63"),
    ("retired_pages", {"retired_pages_sbe": {"ok": 40}, "retired_pages_dbe": {"ok": 22}}, "pass",
     "62 retired pages (limit 63)"),
    ("row_remap_failure", {"remapped_rows": {"ok": [0, 0, 0, 1]}}, "fail", "a row remap failed"),
    ("row_remap_uncorrectable", {"remapped_rows": {"ok": [0, 512, 0, 0]}}, "fail",
     "512 rows remapped for uncorrectable errors, DCGM's limit is 512"),
    ("row_remap_uncorrectable", {"remapped_rows": {"ok": [0, 511, 0, 0]}}, "pass", "511 rows remapped"),
    ("row_remap_pending", {"remapped_rows": {"ok": [0, 3, 1, 0]}}, "fail",
     "a row remap is pending (uncorrectable errors): reset the GPU"),
    ("recovery_action", {"recovery_action": {"ok": 1}}, "fail", "the driver asks for recovery: gpu_reset"),
    ("recovery_action", {"recovery_action": {"ok": 3}}, "fail", "drain_p2p"),
    ("recovery_action", {"recovery_action": {"ok": 9}}, "fail", "unknown (9)"),
    ("inforom", {"inforom": {"err": "Corrupted infoROM", "code": 14}}, "fail", "the InfoROM is corrupted"),
    ("inforom", {"inforom": NOT_SUPPORTED}, "not_supported", "NVML: Not Supported"),
    ("fabric", {"fabric": {"ok": {"state": 1, "status": 0, "health_mask": 0}}}, "fail",
     "fabric training not started: is nvidia-fabricmanager running?"),
    ("fabric", {"fabric": {"ok": {"state": 2, "status": 0, "health_mask": 0}}}, "fail", "in progress"),
    ("fabric", {"fabric": {"ok": {"state": 3, "status": 999, "health_mask": 0}}}, "fail", "NVML error 999"),
    ("fabric", {"fabric": {"ok": {"state": 0, "status": 0, "health_mask": 0}}}, "not_supported", "no NVSwitch"),
    ("fabric", {"fabric": NOT_SUPPORTED}, "not_supported", "Not Supported"),
    ("pcie_link", {"pcie_width": {"ok": 8}}, "warn", "below its maximum width: x8 of x16"),
    ("clocks_event_reasons", {"clocks_event_reasons": {"ok": 0x40 | 0x4}}, "warn",
     "clocks held down now by hw_thermal_slowdown"),
    ("clocks_event_reasons", {"clocks_event_reasons": {"ok": 0x4}}, "pass", "sw_power_cap"),
    ("temperature", {"temperature": {"ok": 87}}, "warn", "87 C, at or above its slowdown threshold of 87 C"),
    ("temperature", {"temperature_slowdown": NOT_SUPPORTED}, "not_supported", "Not Supported"),
    # a call that fails for another reason fails the check, as DCGM's diag does (DCGM_FR_FIELD_QUERY)
    ("persistence_mode", {"persistence_mode": {"err": "Unknown Error", "code": 999}}, "fail",
     "NVML could not read it: Unknown Error"),
])
def test_each_fault_gets_dcgms_verdict(name, changes, verdict, words):
    gpu = judged(**changes)
    result = gpu["checks"][name]
    assert result["verdict"] == verdict, result
    assert words in result["reason"]
    assert gpu["verdict"] == (verdict if verdict in ("warn", "fail") else "pass")
    if verdict in ("warn", "fail"):
        assert "%s: %s" % (name, result["reason"]) in gpu["reasons"]


def test_driver_without_the_renamed_call_is_not_supported_not_failed():
    gpu = judged(clocks_event_reasons={"err": "Function Not Found", "code": 13})
    assert gpu["checks"]["clocks_event_reasons"]["verdict"] == "not_supported"
    assert gpu["verdict"] == "pass"


def test_xids_of_the_gpu_take_the_worst_class():
    events = [{"xid": 13, "pci": "0000:18:00", "pci_key": (0, 0x18, 0), "verdict": "pass", "reason": "x", "line": "a"},
              {"xid": 94, "pci": "0000:18:00", "pci_key": (0, 0x18, 0), "verdict": "warn", "reason": "contained",
               "line": "b"}]
    gpu = judged(events)
    assert gpu["checks"]["xid"]["verdict"] == "warn"
    assert gpu["checks"]["xid"]["reason"] == "Xid 94: contained"
    assert all("pci_key" not in e for e in gpu["checks"]["xid"]["value"])
    assert health.judge_gpu(healthy(), None)["checks"]["xid"]["verdict"] == "unknown"


def test_every_check_of_the_table_is_judged_somewhere():
    gpu_checks = {c["check"] for c in health.CHECKS if c["scope"] == "gpu"}
    assert gpu_checks == set(health.GPU_CHECKS) | {"xid"}
    assert set(judged()["checks"]) == gpu_checks
    host = {c["check"] for c in health.CHECKS if c["scope"] == "host"}
    log = {"events": [], "source": "x", "unreadable": []}
    assert set(health._host_checks(8, 8, log, [], None)) == host
    for row in health.CHECKS:
        assert set(row) == {"check", "scope", "nvml", "threshold", "verdict", "source"}, row


def test_worst_ignores_not_supported_and_unknown():
    assert health.worst(["not_supported", "unknown", "pass"]) == "pass"
    assert health.worst(["pass", "warn", "not_supported"]) == "warn"
    assert health.worst(["warn", "fail"]) == "fail"
    assert health.worst([]) == "pass"
    assert health.worst(["unknown", "not_supported"]) == "unknown"


@pytest.mark.parametrize("kwargs, words", [
    ({"nvml_timeout": 0}, "nvml_timeout: give the seconds"),
    ({"nvml_timeout": float("nan")}, "not a finite number"),
    ({"expected_gpus": -1}, "expected_gpus: -1 is negative"),
    ({"gpus": "zero"}, "gpus: 'zero' is not a GPU index"),
])
def test_bad_options_are_refused_before_nvml_starts(kwargs, words):
    with pytest.raises(InvalidInput) as err:
        health.gather(**kwargs)
    assert words in err.value.msg


# ---------------------------------------------------------------- on the fake GPU kit
#
# Each fault is injected into the fake NVML (sim/fakenvml, its model in sim/simlib/fakegpu.py) and
# read through the real nvidia-ml-py in a fresh interpreter (the loader reads LD_LIBRARY_PATH at start).

GATHER = ("import json, sys\n"
          "from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import health\n"
          "print(json.dumps(health.gather(**json.loads(sys.argv[1]))))\n")


@pytest.fixture(scope="module")
def fakenvml_lib(tmp_path_factory):
    """This checkout's fake NVML, built once into a private directory (never the shared build/)."""
    return fakegpu.build(str(tmp_path_factory.mktemp("fakenvml")))


@pytest.fixture
def root(tmp_path, fakenvml_lib):
    return fakegpu.init(str(tmp_path / "gpu"), gpus=8, lib=fakenvml_lib)


def gather(root, wall=30, **kwargs):
    kwargs.setdefault("kernel_log", fakegpu.kernel_log(root))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, **fakegpu.env(root))
    out = subprocess.run([sys.executable, "-c", GATHER, json.dumps(kwargs)], env=env, capture_output=True,
                         text=True, timeout=wall, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_healthy_fake_host_passes_in_well_under_5_s(root):
    started = time.monotonic()
    res = gather(root, expected_gpus=8)
    wall = time.monotonic() - started
    assert res["verdict"] == "pass", res["reasons"]
    assert res["reasons"] == [] and res["gpu_count"] == 8 and len(res["gpus"]) == 8
    assert res["elapsed_s"] < 5.0 and wall < 5.0
    g0 = res["gpus"][0]
    assert g0["pci_bus_id"] == fakegpu.pci_bus_id(0)
    # a PCIe board without page retirement: named, never a failure
    assert {k for k, c in g0["checks"].items() if c["verdict"] == "not_supported"} == {
        "retired_pages_pending", "retired_pages", "fabric"}
    assert res["host_checks"]["kernel_log"]["value"] == fakegpu.kernel_log(root)


# fault of fakegpu.HEALTH_FAULTS -> the check and DCGM's verdict (docs/gpu_health.md's table)
@pytest.mark.parametrize("fault, check, verdict", [
    ("ecc_dbe", "ecc_dbe_volatile", "fail"),
    ("retired_pending", "retired_pages_pending", "fail"),
    ("retired_limit", "retired_pages", "fail"),
    ("remap_pending", "row_remap_pending", "fail"),
    ("remap_failure", "row_remap_failure", "fail"),
    ("remap_uncorrectable", "row_remap_uncorrectable", "fail"),
    ("recovery_action", "recovery_action", "fail"),
    ("inforom_corrupt", "inforom", "fail"),
    ("fabric_not_started", "fabric", "fail"),
    ("persistence_off", "persistence_mode", "warn"),
    ("ecc_off", "ecc_mode", "warn"),
    ("pcie_downgraded", "pcie_link", "warn"),
    ("thermal", "clocks_event_reasons", "warn"),
])
def test_each_injected_fault_gets_dcgms_verdict(root, fault, check, verdict):
    fakegpu.inject_health(root, 2, fault)
    res = gather(root)
    sick = res["gpus"][2]
    assert sick["checks"][check]["verdict"] == verdict, sick["checks"][check]
    assert sick["verdict"] == verdict and res["verdict"] == verdict
    assert "GPU 2 %s: %s" % (check, sick["checks"][check]["reason"]) in res["reasons"]
    assert [g["verdict"] for i, g in enumerate(res["gpus"]) if i != 2] == ["pass"] * 7


def test_thermal_fault_also_warns_on_temperature(root):
    fakegpu.inject_health(root, 4, "thermal")
    checks = gather(root)["gpus"][4]["checks"]
    assert checks["temperature"]["verdict"] == "warn"
    assert checks["temperature"]["value"] == {"celsius": 88, "slowdown_celsius": 87}


@pytest.mark.parametrize("number, verdict", [(79, "fail"), (48, "fail"), (94, "warn"), (63, "warn"), (13, "pass")])
def test_an_xid_in_the_kernel_log_gets_dcgms_class(root, number, verdict):
    fakegpu.add_xid(root, 5, number)
    res = gather(root)
    xid = res["gpus"][5]["checks"]["xid"]
    assert xid["verdict"] == verdict and [e["xid"] for e in xid["value"]] == [number]
    assert res["verdict"] == verdict


def test_xids_of_a_gpu_gone_from_nvml_fail_the_host_and_unselected_ones_are_left_out(root):
    fakegpu.add_xid(root, 9, 79, "GPU has fallen off the bus.")   # no GPU 9: its address is not NVML's
    fakegpu.add_xid(root, 6, 48)                                  # GPU 6 exists but is not selected
    res = gather(root, gpus=[0, 1])
    assert [g["index"] for g in res["gpus"]] == [0, 1]
    unmatched = res["host_checks"]["xid_unmatched"]
    assert unmatched["verdict"] == "fail" and [e["xid"] for e in unmatched["value"]] == [79]
    assert "which NVML does not list: GPU has fallen off the bus" in unmatched["reason"]
    assert all(g["checks"]["xid"]["value"] == [] for g in res["gpus"])


def test_an_unreadable_kernel_log_is_named_and_warns(root, tmp_path):
    missing = str(tmp_path / "no-such.log")
    res = gather(root, kernel_log=missing)
    assert res["verdict"] == "warn"
    assert res["kernel_log"] == {"source": None, "unreadable": ["%s: No such file or directory" % missing]}
    assert res["host_checks"]["kernel_log"]["verdict"] == "warn"
    assert {g["checks"]["xid"]["verdict"] for g in res["gpus"]} == {"unknown"}


def test_a_wrong_gpu_count_fails_the_host(root):
    res = gather(root, expected_gpus=4)
    assert res["verdict"] == "fail"
    assert res["reasons"] == ["host gpu_count: NVML sees 8 GPUs, 4 expected"]


def test_a_lost_gpu_fails_by_name_and_the_others_are_still_judged(root):
    fakegpu.set_fault(root, "lost", 3)
    res = gather(root)
    assert res["verdict"] == "fail"
    assert res["gpus"][3]["verdict"] == "fail" and set(res["gpus"][3]["checks"]) == {"nvml"}
    assert "GPU is lost" in res["gpus"][3]["checks"]["nvml"]["reason"]
    assert [g["verdict"] for i, g in enumerate(res["gpus"]) if i != 3] == ["pass"] * 7
    assert res["host_checks"]["nvml"]["verdict"] == "fail"


def test_a_hung_driver_is_a_verdict_within_the_timeout_not_a_hung_module(root):
    fakegpu.set_fault(root, "hang")
    started = time.monotonic()
    res = gather(root, wall=20, nvml_timeout=1.0)
    assert time.monotonic() - started < 5.0
    assert res["verdict"] == "fail" and res["gpus"] == [] and res["gpu_count"] is None
    assert "did not answer within 1.0 s while initialising NVML" in res["host_checks"]["nvml"]["reason"]


def test_the_module_through_ansible(root):
    fakegpu.inject_health(root, 1, "remap_pending")
    env = dict(fakegpu.env(root))
    res = run_module("gpu_health", {"expected_gpus": 8, "kernel_log": fakegpu.kernel_log(root)}, env=env, check=True)
    assert res["_rc"] == 0 and res["changed"] is False
    assert res["verdict"] == "fail"
    assert res["reasons"] == ["GPU 1 row_remap_pending: a row remap is pending: reset the GPU to apply it"]
    bad = run_module("gpu_health", {"expected_gpus": -2}, env=env)
    assert bad["_rc"] != 0 and "expected_gpus: -2 is negative" in bad["msg"]
    gated = run_module("gpu_health", {"kernel_log": fakegpu.kernel_log(root), "fail_on": "fail",
                                      "fail_hint": "Replace the GPU."}, env=env)
    assert gated["_rc"] != 0 and gated["verdict"] == "fail" and len(gated["gpus"]) == 8
    assert gated["msg"] == ("GPU health is fail, so nothing is started: GPU 1 row_remap_pending: a row remap is "
                            "pending: reset the GPU to apply it. Replace the GPU.")


def test_one_hung_gpu_is_named_and_the_gpus_after_it_unknown(root):
    fakegpu.set_fault(root, "hang", 3)
    started = time.monotonic()
    res = gather(root, wall=20, nvml_timeout=1.0)
    assert time.monotonic() - started < 5.0
    assert res["verdict"] == "fail"
    assert [g["verdict"] for g in res["gpus"]] == ["pass"] * 3 + ["fail"] + ["unknown"] * 4
    assert "did not answer within 1.0 s while reading the health of GPU 3" in res["gpus"][3]["checks"]["nvml"]["reason"]
    assert res["gpus"][4]["checks"]["nvml"]["reason"] == "not read: NVML stopped answering at GPU 3"
    assert res["host_checks"]["nvml"]["verdict"] == "fail"
