# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_health: the DCGM level-1 software checks NVML can answer, per GPU and per host.

Each check gives a verdict - pass, warn, fail, not_supported (the GPU or driver has no
answer for it: never a failure of the host) or unknown (could not be judged, the reason
says why) - and a reason. A GPU's verdict and the host's are the worst of theirs (fail,
then warn). Thresholds and verdicts follow DCGM 4.6.0 (github.com/NVIDIA/DCGM): the diag's
software plugin nvvs/src/Software.cpp, its limits in common/DcgmGPUHardwareLimits.h, and
the health watches in modules/health/DcgmHealthWatch.cpp; CHECKS names the source of each
and docs/gpu_health.md shows the table (written from CHECKS by scripts/gen_docs.py).

NVML runs in nvml.py's bounded child, one request a GPU: a hung GPU costs one
nvml_timeout, is named, and the GPUs after it are reported unread. NVML trouble is a
verdict (fail, with the reason), never a module failure: only bad options fail the task.
"""

from __future__ import annotations

import time
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import xid as _xid
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import finite
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import NvmlError, NvmlSession, NvmlTimeout
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.selection import check_against, parse_gpus

PASS, WARN, FAIL, NOT_SUPPORTED, UNKNOWN = "pass", "warn", "fail", "not_supported", "unknown"
_RANK = {PASS: 0, WARN: 1, FAIL: 2}

# DCGM_LIMIT_MAX_RETIRED_PAGES and DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE (common/DcgmGPUHardwareLimits.h).
MAX_RETIRED_PAGES = 63
MAX_ROW_REMAP_UNCORRECTABLE = 512
# nvmlClocksEventReason bits DCGM counts as a clocks-event violation (nvvs/src/DcgmRecorder.cpp
# CheckForClocksEvent): HW slowdown, SW thermal, HW thermal, HW power brake.
CLOCKS_EVENT_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
CLOCKS_EVENT_VIOLATION_MASK = 0x8 | 0x20 | 0x40 | 0x80
# nvmlDeviceGpuRecoveryAction_t (nvml.h; nvidia-ml-py's NVML_GPU_RECOVERY_ACTION_*).
RECOVERY_ACTIONS = {0: "none", 1: "gpu_reset", 2: "node_reboot", 3: "drain_p2p", 4: "drain_and_reset",
                    5: "recover_imex_domain", 6: "bus_reset", 7: "system_reboot"}
# nvmlGpuFabricState_t
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
_NOT_SUPPORTED_CODES = (3, 13)  # NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND (older driver)
_CORRUPTED_INFOROM = 14

# The table docs/gpu_health.md shows (scripts/gen_docs.py reads this literal): check, NVML call,
# threshold, verdict, source. `scope` is gpu (each selected GPU) or host (once).
CHECKS = (
    {"check": "persistence_mode", "scope": "gpu", "nvml": "nvmlDeviceGetPersistenceMode",
     "threshold": "disabled", "verdict": "warn",
     "source": "DCGM nvvs/src/Software.cpp checkPersistenceMode"},
    {"check": "ecc_mode", "scope": "gpu", "nvml": "nvmlDeviceGetEccMode",
     "threshold": "current mode disabled, or a different mode pending", "verdict": "warn",
     "source": "issue 35; DCGM has no verdict of its own, and its ECC, retirement and remap checks need ECC on"},
    {"check": "ecc_dbe_volatile", "scope": "gpu",
     "nvml": "nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE)", "threshold": "> 0", "verdict": "fail",
     "source": "DCGM modules/health/DcgmHealthWatch.cpp MonitorMemVolatileDbes"},
    {"check": "retired_pages_pending", "scope": "gpu", "nvml": "nvmlDeviceGetRetiredPagesPendingStatus",
     "threshold": "pending", "verdict": "fail", "source": "DCGM nvvs/src/Software.cpp checkPageRetirement"},
    {"check": "retired_pages", "scope": "gpu",
     "nvml": "nvmlDeviceGetRetiredPages_v2 (single-bit + double-bit causes)", "threshold": ">= 63 pages",
     "verdict": "fail",
     "source": "DCGM nvvs/src/Software.cpp checkPageRetirement, DCGM_LIMIT_MAX_RETIRED_PAGES"},
    {"check": "row_remap_failure", "scope": "gpu", "nvml": "nvmlDeviceGetRemappedRows (failureOccurred)",
     "threshold": "a remap failed", "verdict": "fail",
     "source": "DCGM nvvs/src/Software.cpp checkRowRemapping"},
    {"check": "row_remap_uncorrectable", "scope": "gpu", "nvml": "nvmlDeviceGetRemappedRows (uncorrectable)",
     "threshold": ">= 512 rows", "verdict": "fail",
     "source": "DCGM nvvs/src/Software.cpp checkRowRemapping, DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE"},
    {"check": "row_remap_pending", "scope": "gpu", "nvml": "nvmlDeviceGetRemappedRows (isPending)",
     "threshold": "pending", "verdict": "fail", "source": "DCGM nvvs/src/Software.cpp checkRowRemapping"},
    {"check": "recovery_action", "scope": "gpu",
     "nvml": "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230)",
     "threshold": "any action but none", "verdict": "fail",
     "source": "DCGM nvvs/src/Software.cpp checkGpuRecoveryState"},
    {"check": "inforom", "scope": "gpu", "nvml": "nvmlDeviceValidateInforom",
     "threshold": "NVML_ERROR_CORRUPTED_INFOROM", "verdict": "fail",
     "source": "DCGM nvvs/src/Software.cpp checkInforom"},
    {"check": "fabric", "scope": "gpu", "nvml": "nvmlDeviceGetGpuFabricInfoV",
     "threshold": "state not started or in progress, or completed with an error", "verdict": "fail",
     "source": "DCGM nvvs/src/Software.cpp checkFabricManager; states as dcgmlib/src/DcgmCacheManager.cpp "
               "GetFMStatusFromStruct"},
    {"check": "pcie_link", "scope": "gpu",
     "nvml": "nvmlDeviceGetCurrPcieLinkWidth / GetMaxPcieLinkWidth (and ...Generation)",
     "threshold": "width below its maximum (the generation is shown, not judged: an idle GPU lowers it)",
     "verdict": "warn",
     "source": "DeepOps node health checks (issue 35); DCGM judges the link only in P0 "
               "(nvvs/plugin_src/pcie/PcieMain.cpp)"},
    {"check": "clocks_event_reasons", "scope": "gpu", "nvml": "nvmlDeviceGetCurrentClocksEventReasons",
     "threshold": "hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown or hw_power_brake_slowdown now",
     "verdict": "warn",
     "source": "reasons: DCGM nvvs/src/DcgmRecorder.cpp CheckForClocksEvent; verdict: "
               "DcgmHealthWatch.cpp MonitorThermal"},
    {"check": "temperature", "scope": "gpu",
     "nvml": "nvmlDeviceGetTemperature(GPU), nvmlDeviceGetTemperatureThreshold(SLOWDOWN)",
     "threshold": ">= the slowdown threshold", "verdict": "warn",
     "source": "NVML's slowdown threshold; verdict as DcgmHealthWatch.cpp MonitorThermal"},
    {"check": "xid", "scope": "gpu", "nvml": "kernel log (journalctl -k -b 0, dmesg): NVRM: Xid",
     "threshold": "fail: 48 64 74 79 95 119 120 140; warn: 94 and the subsystem Xids", "verdict": "fail or warn",
     "source": "DCGM modules/health/DcgmHealthWatch.cpp BuildXidMappings"},
    {"check": "gpu_count", "scope": "host", "nvml": "nvmlDeviceGetCount",
     "threshold": "differs from expected_gpus", "verdict": "fail", "source": "DeepOps node health checks (issue 35)"},
    {"check": "kernel_log", "scope": "host", "nvml": "kernel log",
     "threshold": "no source readable (each is named with why)", "verdict": "warn",
     "source": "ours: Xids cannot be judged without it"},
    {"check": "xid_unmatched", "scope": "host", "nvml": "kernel log: NVRM: Xid",
     "threshold": "an Xid of a PCI address NVML does not list (a GPU off the bus)", "verdict": "as xid",
     "source": "DCGM modules/health/DcgmHealthWatch.cpp BuildXidMappings"},
    {"check": "nvml", "scope": "host", "nvml": "nvmlInit, every call within nvml_timeout",
     "threshold": "fails to initialise, hangs, or loses a GPU", "verdict": "fail",
     "source": "ours: a GPU NVML cannot read cannot be trusted"},
)


def check(verdict: str, reason: str, value: Any = None) -> dict:
    return {"verdict": verdict, "reason": reason, "value": value}


def worst(verdicts: Any) -> str:
    """fail, else warn, else pass; unknown only when nothing was judged (a GPU NVML never reached)."""
    verdicts = list(verdicts)
    judged = [v for v in verdicts if v in (PASS, WARN, FAIL)]
    if judged:
        return max(judged, key=lambda v: _RANK[v])
    return UNKNOWN if UNKNOWN in verdicts else PASS


def _unusable(reading: dict) -> dict | None:
    """The check for a reading NVML did not give: not supported, or a failure DCGM fails on."""
    if "ok" in reading:
        return None
    if reading.get("code") in _NOT_SUPPORTED_CODES:
        return check(NOT_SUPPORTED, "NVML: %s" % reading["err"])
    # DCGM's diag fails a check whose field it cannot read (DCGM_FR_FIELD_QUERY).
    return check(FAIL, "NVML could not read it: %s" % reading["err"])


# ------------------------------------------------------------------ one check each

def _persistence_mode(r):
    mode = r["persistence_mode"]
    if mode["ok"]:
        return check(PASS, "enabled", True)
    return check(WARN, "persistence mode is disabled: the driver tears the GPU state down whenever no client "
                       "holds it (run nvidia-persistenced)", False)


def _ecc_mode(r):
    current, pending = r["ecc_mode"]["ok"]
    value = {"current": bool(current), "pending": bool(pending)}
    if not current:
        return check(WARN, "ECC is disabled: memory errors go undetected", value)
    if pending != current:
        return check(WARN, "ECC is enabled now, disabled after the next reset", value)
    return check(PASS, "enabled", value)


def _ecc_dbe_volatile(r):
    count = int(r["ecc_dbe_volatile"]["ok"])
    if count > 0:
        return check(FAIL, "%d uncorrectable (double-bit) ECC error%s since the driver loaded"
                     % (count, "" if count == 1 else "s"), count)
    return check(PASS, "none since the driver loaded", 0)


def _retired_pages_pending(r):
    if r["retired_pages_pending"]["ok"]:
        dbe = r["ecc_dbe_volatile"].get("ok") or 0
        return check(FAIL, "a page retirement is pending (takes effect at the next reset)%s"
                     % (", after %d double-bit ECC errors" % dbe if dbe else ""), True)
    return check(PASS, "none pending", False)


def _retired_pages(r):
    sbe, dbe = r["retired_pages_sbe"], r["retired_pages_dbe"]
    if "ok" not in sbe and "ok" not in dbe:
        return _unusable(dbe if dbe.get("code") not in _NOT_SUPPORTED_CODES else sbe)
    total = (sbe.get("ok") or 0) + (dbe.get("ok") or 0)
    value = {"single_bit": sbe.get("ok"), "double_bit": dbe.get("ok"), "total": total}
    if total >= MAX_RETIRED_PAGES:
        return check(FAIL, "%d retired pages, DCGM's limit is %d" % (total, MAX_RETIRED_PAGES), value)
    return check(PASS, "%d retired pages (limit %d)" % (total, MAX_RETIRED_PAGES), value)


def _rows(r):
    correctable, uncorrectable, pending, failure = r["remapped_rows"]["ok"]
    return {"correctable": correctable, "uncorrectable": uncorrectable, "pending": bool(pending),
            "failure": bool(failure)}


def _row_remap_failure(r):
    rows = _rows(r)
    if rows["failure"]:
        return check(FAIL, "a row remap failed: the GPU is out of spare rows", rows)
    return check(PASS, "no remap failure", rows)


def _row_remap_uncorrectable(r):
    rows = _rows(r)
    if rows["uncorrectable"] >= MAX_ROW_REMAP_UNCORRECTABLE:
        return check(FAIL, "%d rows remapped for uncorrectable errors, DCGM's limit is %d"
                     % (rows["uncorrectable"], MAX_ROW_REMAP_UNCORRECTABLE), rows)
    return check(PASS, "%d rows remapped for uncorrectable errors (limit %d)"
                 % (rows["uncorrectable"], MAX_ROW_REMAP_UNCORRECTABLE), rows)


def _row_remap_pending(r):
    rows = _rows(r)
    if rows["pending"]:
        return check(FAIL, "a row remap is pending%s: reset the GPU to apply it"
                     % (" (uncorrectable errors)" if rows["uncorrectable"] else ""), rows)
    return check(PASS, "none pending", rows)


def _recovery_action(r):
    action = int(r["recovery_action"]["ok"])
    name = RECOVERY_ACTIONS.get(action, "unknown (%d)" % action)
    if action:
        return check(FAIL, "the driver asks for recovery: %s" % name, name)
    return check(PASS, "none", name)


def _inforom(r):
    reading = r["inforom"]
    if "ok" in reading:
        return check(PASS, "valid", True)
    if reading.get("code") == _CORRUPTED_INFOROM:
        return check(FAIL, "the InfoROM is corrupted (NVML: %s)" % reading["err"], False)
    return _unusable(reading)


def _fabric(r):
    info = r["fabric"]["ok"]
    state = FABRIC_STATES.get(info["state"], "unknown (%d)" % info["state"])
    value = {"state": state, "status": info["status"], "health_mask": info["health_mask"]}
    if state == "not_supported":
        return check(NOT_SUPPORTED, "no NVSwitch fabric on this GPU", value)
    if state == "completed" and info["status"] == 0:
        return check(PASS, "fabric training completed", value)
    if state == "completed":
        return check(FAIL, "fabric training completed with NVML error %d" % info["status"], value)
    return check(FAIL, "fabric training %s: is nvidia-fabricmanager running?" % state.replace("_", " "), value)


def _pcie_link(r):
    width, width_max = r["pcie_width"], r["pcie_width_max"]
    bad = _unusable(width) or _unusable(width_max)
    if bad:
        return bad
    gen, gen_max = r["pcie_gen"].get("ok"), r["pcie_gen_max"].get("ok")
    value = {"width": width["ok"], "width_max": width_max["ok"], "generation": gen, "generation_max": gen_max}
    link = "x%d of x%d, gen %s of %s" % (width["ok"], width_max["ok"], gen, gen_max)
    if width["ok"] < width_max["ok"]:
        return check(WARN, "PCIe link below its maximum width: %s" % link, value)
    return check(PASS, link, value)


def _clocks_event_reasons(r):
    bits = int(r["clocks_event_reasons"]["ok"])
    names = [name for bit, name in sorted(CLOCKS_EVENT_REASONS.items()) if bits & bit]
    slow = [name for bit, name in sorted(CLOCKS_EVENT_REASONS.items()) if bits & bit & CLOCKS_EVENT_VIOLATION_MASK]
    if slow:
        return check(WARN, "clocks held down now by %s" % ", ".join(slow), names)
    return check(PASS, ", ".join(names) or "none", names)


def _temperature(r):
    temp, limit = r["temperature"], r["temperature_slowdown"]
    bad = _unusable(temp) or _unusable(limit)
    if bad:
        return bad
    value = {"celsius": temp["ok"], "slowdown_celsius": limit["ok"]}
    if temp["ok"] >= limit["ok"]:
        return check(WARN, "%d C, at or above its slowdown threshold of %d C" % (temp["ok"], limit["ok"]), value)
    return check(PASS, "%d C (slowdown at %d C)" % (temp["ok"], limit["ok"]), value)


# Each GPU check and the readings it needs (a missing one answers for the check).
GPU_CHECKS = {
    "persistence_mode": (_persistence_mode, ("persistence_mode",)),
    "ecc_mode": (_ecc_mode, ("ecc_mode",)),
    "ecc_dbe_volatile": (_ecc_dbe_volatile, ("ecc_dbe_volatile",)),
    "retired_pages_pending": (_retired_pages_pending, ("retired_pages_pending",)),
    "retired_pages": (_retired_pages, ()),
    "row_remap_failure": (_row_remap_failure, ("remapped_rows",)),
    "row_remap_uncorrectable": (_row_remap_uncorrectable, ("remapped_rows",)),
    "row_remap_pending": (_row_remap_pending, ("remapped_rows",)),
    "recovery_action": (_recovery_action, ("recovery_action",)),
    "inforom": (_inforom, ()),
    "fabric": (_fabric, ("fabric",)),
    "pcie_link": (_pcie_link, ()),
    "clocks_event_reasons": (_clocks_event_reasons, ("clocks_event_reasons",)),
    "temperature": (_temperature, ()),
}


def judge_gpu(record: dict, xid_events: list | None) -> dict:
    """A GPU's checks, verdict and reasons from its readings (health_probe.read) and its Xids."""
    readings = record["readings"]
    checks = {}
    for name, (judge, needs) in GPU_CHECKS.items():
        missing = [_unusable(readings[key]) for key in needs if "ok" not in readings[key]]
        checks[name] = missing[0] if missing else judge(readings)
    if xid_events is None:
        checks["xid"] = check(UNKNOWN, "the kernel log could not be read (see the host's kernel_log check)")
    else:
        bad = [e for e in xid_events if e["verdict"] != PASS]
        verdict = _xid.worst(xid_events)
        reason = "; ".join("Xid %d: %s" % (e["xid"], e["reason"]) for e in bad) or \
            ("%d Xid%s, none judged by DCGM" % (len(xid_events), "" if len(xid_events) == 1 else "s")
             if xid_events else "none since boot")
        checks["xid"] = check(verdict, reason, [_xid.public(e) for e in xid_events])
    return _gpu_result(record, checks)


def _gpu_result(record: dict, checks: dict) -> dict:
    reasons = ["%s: %s" % (name, c["reason"]) for name, c in checks.items() if c["verdict"] in (WARN, FAIL)]
    return {"index": record["index"], "name": record.get("name"), "uuid": record.get("uuid"),
            "pci_bus_id": record.get("pci_bus_id"), "verdict": worst(c["verdict"] for c in checks.values()),
            "reasons": reasons, "checks": checks}


def unread_gpu(index: int, verdict: str, reason: str) -> dict:
    """A GPU NVML did not read: lost or hung (fail), or not reached after a hang (unknown)."""
    return _gpu_result({"index": index}, {"nvml": check(verdict, reason)})


# ------------------------------------------------------------------ the host

def _read_gpus(indices: list, session: Any) -> list:
    """Records (health_probe.read) or unread_gpu results, in index order; stops at a hang."""
    out = []
    for position, index in enumerate(indices):
        try:
            reply = session.health(index)
        except (NvmlTimeout, NvmlError) as exc:
            out.append(unread_gpu(index, FAIL, exc.msg))
            out += [unread_gpu(i, UNKNOWN, "not read: NVML stopped answering at GPU %d" % index)
                    for i in indices[position + 1:]]
            return out
        if reply.get("errors"):
            out.append(unread_gpu(index, FAIL, "NVML could not read this GPU: %s" % reply["errors"][str(index)]))
        else:
            out.append(reply["gpus"][0])
    return out


def _xids_by_gpu(events: list | None, records: list, all_keys: set) -> tuple:
    """({index: events}, unmatched events) - an Xid of a GPU NVML lists but not selected is left out."""
    if events is None:
        return {r["index"]: None for r in records}, []
    by_key = {_xid.pci_key(r.get("pci_bus_id")): r["index"] for r in records if r.get("pci_bus_id")}
    per_gpu = {r["index"]: [] for r in records}
    unmatched = []
    for event in events:
        if event["pci_key"] in by_key:
            per_gpu[by_key[event["pci_key"]]].append(event)
        elif event["pci_key"] not in all_keys:
            unmatched.append(event)
    return per_gpu, unmatched


def _host_checks(count: int | None, expected: int | None, log: dict, unmatched: list, nvml_problem: str | None):
    checks = {}
    if nvml_problem:
        checks["nvml"] = check(FAIL, nvml_problem)
    else:
        checks["nvml"] = check(PASS, "initialised; every call answered in time")
    if count is None:
        checks["gpu_count"] = check(UNKNOWN, "NVML did not say how many GPUs there are")
    elif expected is None:
        checks["gpu_count"] = check(PASS, "%d GPUs (no expected_gpus given)" % count, count)
    elif count != expected:
        checks["gpu_count"] = check(FAIL, "NVML sees %d GPU%s, %d expected" % (count, "" if count == 1 else "s",
                                                                               expected), count)
    else:
        checks["gpu_count"] = check(PASS, "%d GPUs, as expected" % count, count)
    if log["events"] is None:
        checks["kernel_log"] = check(WARN, "no kernel log could be read, so Xids are not judged: %s"
                                     % "; ".join(log["unreadable"]), log["unreadable"])
    else:
        checks["kernel_log"] = check(PASS, "read %s" % log["source"], log["source"])
    bad = [e for e in unmatched if e["verdict"] != PASS]
    checks["xid_unmatched"] = check(
        _xid.worst(unmatched),
        "; ".join("Xid %d on PCI %s, which NVML does not list: %s" % (e["xid"], e["pci"], e["reason"]) for e in bad)
        or "none", [_xid.public(e) for e in unmatched])
    return checks


def gather(gpus: Any = "all", nvml_timeout: float = 20.0, expected_gpus: int | None = None,
           kernel_log: str | None = None) -> dict:
    """The host's health: verdict, reasons, host checks and one entry per selected GPU."""
    started = time.monotonic()
    requested = parse_gpus(gpus)
    finite(nvml_timeout, "nvml_timeout: give the seconds one NVML request may take, above 0", strict=True)
    if expected_gpus is not None and expected_gpus < 0:
        raise InvalidInput("expected_gpus: %d is negative; give the number of GPUs this host should have, "
                           "or leave it out" % expected_gpus)
    log = _xid.since_boot(kernel_log)
    count = driver = None
    records, nvml_problem, all_keys = [], None, set()
    try:
        with NvmlSession(nvml_timeout) as session:
            driver, count = session.driver, session.count
            indices = check_against(requested, count)
            records = _read_gpus(indices, session)
            if log["events"] is not None and any(e["pci_key"] for e in log["events"]):
                all_keys = _all_pci_keys(session, count, indices, records)
    except (NvmlTimeout, NvmlError) as exc:
        nvml_problem = exc.msg
    read = [r for r in records if "readings" in r]
    failed = [r for r in records if "readings" not in r]
    if failed and not nvml_problem:
        nvml_problem = "; ".join("GPU %d: %s" % (r["index"], r["checks"]["nvml"]["reason"]) for r in failed
                                 if r["verdict"] == FAIL)
    per_gpu, unmatched = _xids_by_gpu(log["events"], read, all_keys)
    results = sorted([judge_gpu(r, per_gpu[r["index"]]) for r in read] + failed, key=lambda g: g["index"])
    host = _host_checks(count, expected_gpus, log, unmatched, nvml_problem)
    reasons = ["host %s: %s" % (name, c["reason"]) for name, c in host.items() if c["verdict"] in (WARN, FAIL)]
    reasons += ["GPU %d %s" % (g["index"], reason) for g in results for reason in g["reasons"]]
    verdict = worst([c["verdict"] for c in host.values()] + [g["verdict"] for g in results])
    return {"verdict": verdict, "reasons": reasons, "driver_version": driver, "gpu_count": count,
            "host_checks": host, "gpus": results,
            "kernel_log": {"source": log["source"], "unreadable": log["unreadable"]},
            "elapsed_s": round(time.monotonic() - started, 3)}


def _all_pci_keys(session: Any, count: int, indices: list, records: list) -> set:
    """PCI keys of every GPU NVML lists, so an unselected GPU's Xid is not taken for one off the bus."""
    keys = {_xid.pci_key(r.get("pci_bus_id")) for r in records if r.get("pci_bus_id")}
    for index in range(count):
        if index in indices:
            continue
        try:
            reply = session.health(index)
        except (NvmlTimeout, NvmlError):
            break
        for rec in reply.get("gpus", []):
            keys.add(_xid.pci_key(rec.get("pci_bus_id")))
    return keys
