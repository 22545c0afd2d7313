# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-GPU state as both gpu_info and gpu_release report it."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import gpu_memory_mib


def holder_record(info: Any, reason: Any = None) -> Any:
    rec = info.as_dict()
    if reason:
        rec["protected"] = reason
    return rec


def describe(records: Any, holders: Any, table: Any, protection: Any, v1_reserve_mib: Any) -> Any:
    """Merge NVML records with the device-file scan into the reported GPU list.

    A GPU's holders are the processes with its device file open or mapped,
    plus those NVML lists on it (when NVML can see their PID here).
    """
    out = []
    for rec in records:
        used, reserved, total = gpu_memory_mib(rec, v1_reserve_mib)
        pids = holders.holders_of([rec["minor"]], include_open=True) | {p["pid"] for p in rec["processes"] if p["pid"] in table}
        pids -= protection.own_tree
        out.append({
            "index": rec["index"], "uuid": rec["uuid"], "name": rec["name"],
            "minor": rec["minor"], "memory_api": rec["memory_api"],
            "total_mib": total, "used_mib": used, "reserved_mib": reserved,
            "holders": [holder_record(table[p], protection.reason(p)) for p in sorted(pids) if p in table],
            "nvml_processes": [{"pid": p["pid"], "used_mib": None if p["used"] is None else round(p["used"] / 1048576.0, 1)}
                               for p in rec["processes"]],
        })
    return out
