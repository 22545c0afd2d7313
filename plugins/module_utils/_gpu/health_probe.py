# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NVML readings gpu_health judges, taken in the NVML child (nvml.py runs read()).

Every reading is {"ok": value} or {"err": message, "code": NVML return code}, so one
call a GPU does not support (NVML_ERROR_NOT_SUPPORTED on a PCIe board's fabric, page
retirement on Ampere and later) stays that reading's answer and never hides the others.
The judging is health.py's; this file only asks.
"""

from __future__ import annotations

from typing import Any

# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: there is no nvmlDeviceGet... function for it, only the field.
FIELD_RECOVERY_ACTION = 230
# c_nvmlValue_t's members by nvmlValueType_t (nvml.h: DOUBLE, UNSIGNED_INT, UNSIGNED_LONG, ...).
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _ask(pynvml: Any, call: Any, *args: Any) -> dict:
    try:
        return {"ok": call(*args)}
    except pynvml.NVMLError as exc:
        return {"err": str(exc), "code": getattr(exc, "value", None)}


def _clocks_event_reasons(pynvml: Any, handle: Any) -> Any:
    # Drivers before the 535 rename have only the ...ThrottleReasons entry point (same bits).
    try:
        return pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
    except pynvml.NVMLError_FunctionNotFound:
        return pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)


def _recovery_action(pynvml: Any, handle: Any) -> int:
    value = pynvml.nvmlDeviceGetFieldValues(handle, [FIELD_RECOVERY_ACTION])[0]
    if value.nvmlReturn != pynvml.NVML_SUCCESS:
        raise pynvml.NVMLError(value.nvmlReturn)
    member = _VALUE_MEMBERS[value.valueType] if 0 <= value.valueType < len(_VALUE_MEMBERS) else "uiVal"
    return int(getattr(value.value, member))


def _fabric(pynvml: Any, handle: Any) -> dict:
    info = pynvml.c_nvmlGpuFabricInfoV_t()
    pynvml.nvmlDeviceGetGpuFabricInfoV(handle, pynvml.byref(info))
    return {"state": int(info.state), "status": int(info.status), "health_mask": int(info.healthMask)}


def _validate_inforom(pynvml: Any, handle: Any) -> bool:
    pynvml.nvmlDeviceValidateInforom(handle)
    return True


def read(pynvml: Any, index: int) -> dict:
    """Every reading of GPU `index`; a lost GPU raises (nvml.py reports it for that GPU)."""
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    ask = lambda call, *args: _ask(pynvml, call, *args)  # noqa: E731 - the one shape of every reading
    rec = {"index": index, "name": _text(pynvml.nvmlDeviceGetName(handle)),
           "uuid": _text(pynvml.nvmlDeviceGetUUID(handle))}
    pci = ask(pynvml.nvmlDeviceGetPciInfo, handle)
    rec["pci_bus_id"] = _text(pci["ok"].busId) if "ok" in pci else None
    rec["readings"] = {
        "persistence_mode": ask(pynvml.nvmlDeviceGetPersistenceMode, handle),
        "ecc_mode": ask(pynvml.nvmlDeviceGetEccMode, handle),
        "ecc_dbe_volatile": ask(pynvml.nvmlDeviceGetTotalEccErrors, handle,
                                pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC),
        "retired_pages_pending": ask(pynvml.nvmlDeviceGetRetiredPagesPendingStatus, handle),
        "retired_pages_sbe": ask(lambda h: len(pynvml.nvmlDeviceGetRetiredPages_v2(
            h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)), handle),
        "retired_pages_dbe": ask(lambda h: len(pynvml.nvmlDeviceGetRetiredPages_v2(
            h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)), handle),
        # (correctable, uncorrectable, pending, failure)
        "remapped_rows": ask(lambda h: list(pynvml.nvmlDeviceGetRemappedRows(h)), handle),
        "recovery_action": ask(_recovery_action, pynvml, handle),
        "inforom": ask(_validate_inforom, pynvml, handle),
        "fabric": ask(_fabric, pynvml, handle),
        "pcie_width": ask(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
        "pcie_width_max": ask(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle),
        "pcie_gen": ask(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
        "pcie_gen_max": ask(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
        "clocks_event_reasons": ask(_clocks_event_reasons, pynvml, handle),
        "temperature": ask(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU),
        "temperature_slowdown": ask(pynvml.nvmlDeviceGetTemperatureThreshold, handle,
                                    pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
    }
    return rec
