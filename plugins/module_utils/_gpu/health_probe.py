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
FUNCTION_NOT_FOUND = 13  # NVML_ERROR_FUNCTION_NOT_FOUND
# c_nvmlValue_t's members by nvmlValueType_t (nvml.h: DOUBLE, UNSIGNED_INT, UNSIGNED_LONG, ...).
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _ask(pynvml: Any, call: Any, *args: Any) -> dict:
    """`call` (a function, or the name of a pynvml one) applied to `args`, as a reading."""
    try:
        return {"ok": (getattr(pynvml, call) if isinstance(call, str) else call)(*args)}
    except pynvml.NVMLError as exc:
        return {"err": str(exc), "code": getattr(exc, "value", None)}
    except AttributeError as exc:  # an nvidia-ml-py without the wrapper: as a driver without the call
        return {"err": "nvidia-ml-py has no %s" % exc, "code": FUNCTION_NOT_FOUND}


def _first(pynvml: Any, *calls: Any) -> Any:
    """The first of `calls` (name, args...) the driver and nvidia-ml-py have; the last one's error otherwise."""
    for name, *args in calls[:-1]:
        try:
            return getattr(pynvml, name)(*args)
        except (pynvml.NVMLError_FunctionNotFound, AttributeError):
            continue
    name, *args = calls[-1]
    return getattr(pynvml, name)(*args)


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

    def ask(call, *args):  # the one shape of every reading
        return _ask(pynvml, call, *args)

    rec = {"index": index, "name": _text(pynvml.nvmlDeviceGetName(handle)),
           "uuid": _text(pynvml.nvmlDeviceGetUUID(handle))}
    pci = ask("nvmlDeviceGetPciInfo", handle)
    rec["pci_bus_id"] = _text(pci["ok"].busId) if "ok" in pci else None
    rec["readings"] = {
        "persistence_mode": ask("nvmlDeviceGetPersistenceMode", handle),
        "ecc_mode": ask("nvmlDeviceGetEccMode", handle),
        "ecc_dbe_volatile": ask("nvmlDeviceGetTotalEccErrors", handle,
                                pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC),
        "retired_pages_pending": ask("nvmlDeviceGetRetiredPagesPendingStatus", handle),
        "retired_pages_sbe": ask(lambda h: len(pynvml.nvmlDeviceGetRetiredPages_v2(
            h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)), handle),
        "retired_pages_dbe": ask(lambda h: len(pynvml.nvmlDeviceGetRetiredPages_v2(
            h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)), handle),
        # (correctable, uncorrectable, pending, failure)
        "remapped_rows": ask(lambda h: list(pynvml.nvmlDeviceGetRemappedRows(h)), handle),
        "recovery_action": ask(_recovery_action, pynvml, handle),
        "inforom": ask(_validate_inforom, pynvml, handle),
        "fabric": ask(_fabric, pynvml, handle),
        "pcie_width": ask("nvmlDeviceGetCurrPcieLinkWidth", handle),
        "pcie_width_max": ask("nvmlDeviceGetMaxPcieLinkWidth", handle),
        "pcie_gen": ask("nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "pcie_gen_max": ask("nvmlDeviceGetMaxPcieLinkGeneration", handle),
        # Drivers before the 535 rename have only ...ThrottleReasons (the same bits).
        "clocks_event_reasons": ask(_first, pynvml, ("nvmlDeviceGetCurrentClocksEventReasons", handle),
                                    ("nvmlDeviceGetCurrentClocksThrottleReasons", handle)),
        # nvmlDeviceGetTemperature is deprecated for ...V (nvidia-ml-py 13); either answers.
        "temperature": ask(_first, pynvml, ("nvmlDeviceGetTemperature", handle, pynvml.NVML_TEMPERATURE_GPU),
                           ("nvmlDeviceGetTemperatureV", handle, pynvml.NVML_TEMPERATURE_GPU)),
        "temperature_slowdown": ask("nvmlDeviceGetTemperatureThreshold", handle,
                                    pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
    }
    return rec
