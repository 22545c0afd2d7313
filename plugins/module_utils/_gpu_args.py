# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Argument-spec pieces gpu_release and gpu_info share, and error reporting."""

from __future__ import annotations

from ._errors import GpuFleetError, MissingLibrary
from ._nvml import DEFAULT_V1_RESERVE_MIB
from ._proctable import HAS_PSUTIL, PSUTIL_IMPORT_ERROR

COMMON_ARGS = dict(
    gpus=dict(type="raw", default="all"),
    devices=dict(type="path"),
    nvml_timeout=dict(type="float", default=20.0),
    v1_reserve_mib=dict(type="float", default=DEFAULT_V1_RESERVE_MIB),
    protect=dict(type="list", elements="str", default=[]),
)


def require_psutil(module):
    if not HAS_PSUTIL:
        from ansible.module_utils.basic import missing_required_lib
        module.fail_json(msg=missing_required_lib("psutil", url="https://pypi.org/project/psutil/")
                         + " (python -m pip install psutil)", exception=str(PSUTIL_IMPORT_ERROR))


def fail_from(module, exc):
    """Turn a GpuFleetError into fail_json, keeping any partial result."""
    extra = dict(exc.details.get("result") or {}) if isinstance(exc, GpuFleetError) else {}
    if isinstance(exc, MissingLibrary):
        extra["missing_library"] = True
    extra.pop("changed", None)
    changed = bool((exc.details.get("result") or {}).get("changed")) if isinstance(exc, GpuFleetError) else False
    module.fail_json(msg=exc.msg if isinstance(exc, GpuFleetError) else str(exc), changed=changed, **extra)
