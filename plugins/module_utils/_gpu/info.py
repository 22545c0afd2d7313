# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read-only GPU facts for gpu_info, built from the same parts as gpu_release."""

from __future__ import annotations

import os
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import holders as _holders
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import mps as _mps
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import COMMON_ARGS
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import NvmlSession
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.protect import Protection, compile_protect
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.selection import check_against, parse_gpus
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.state import describe
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable


def gather(gpus: Any = "all", devices: str | None = None, nvml_timeout: float = 20.0, v1_reserve_mib: float = 1024,
           protect: list | tuple = ()) -> dict:
    requested = parse_gpus(gpus)
    extra = compile_protect(protect)
    try:
        with NvmlSession(nvml_timeout) as session:
            indices = check_against(requested, session.count)
            records = session.snapshot(indices)
            driver, count = session.driver, session.count
            # The snapshot comes after the NVML child exists, so it counts as ours.
            table = _proctable.snapshot()
            protection = Protection(table, os.getpid(), extra)
            holders = _holders.scan(_holders.devices_dir(devices))
        return {"driver_version": driver, "gpu_count": count,
                "gpus": describe(records, holders, table, protection, v1_reserve_mib),
                "mps": _mps.summary(table, records)}
    finally:
        bounded_fs.close()  # the helper for file-system calls that may block (_proc/bounded_fs)


def gpu_facts(params: dict) -> dict:
    """The gpu_info module's result from its parameters."""
    return dict(gather(**{k: params[k] for k in COMMON_ARGS}), changed=False)
