# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The health gate in front of a launch: gpu_health's verdict decides whether a server may start.

The gate runs after the release and before the start, because that is where the seeds' doubt
lies: a driver whose bookkeeping a prior unclean shutdown corrupted shows it after the teardown,
not before. A verdict of C(fail) (DCGM's level-1 thresholds, _gpu/health.py) refuses the start;
C(warn) and C(unknown) are reported with the result and do not. The refusal names the reasons
and the setting that launches anyway.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import health as _health

# The options of a gate, as gpu_health and server_process take them.
GATE_OPTIONS = dict(
    fail_on=dict(type="str", choices=["never", "fail", "warn"], default="never"),
    fail_hint=dict(type="str", default=""),
)
_RANK = {"never": 3, "fail": 2, "warn": 1}
_VERDICT_RANK = {_health.PASS: 0, _health.UNKNOWN: 0, _health.WARN: 1, _health.FAIL: 2}


def judge(result: dict, fail_on: str = "never", fail_hint: str = "", key: str | None = None) -> dict:
    """`result` (health.gather's) when its verdict is below `fail_on`; else a refusal naming the reasons that
    carries the result (under `key`, or as the failure's own fields)."""
    if _VERDICT_RANK.get(result["verdict"], 0) < _RANK[fail_on]:
        return result
    reasons = "; ".join(result["reasons"]) or "no reason given"
    msg = "GPU health is %s, so nothing is started: %s." % (result["verdict"], reasons)
    if fail_hint:
        msg += " " + fail_hint
    raise GpuFleetError(msg, result=result if key is None else {key: result})


def health_facts(params: dict) -> dict:
    """The gpu_health module's result from its parameters."""
    result = _health.gather(gpus=params["gpus"], nvml_timeout=params["nvml_timeout"],
                            expected_gpus=params["expected_gpus"], kernel_log=params["kernel_log"])
    return dict(judge(result, params["fail_on"], params["fail_hint"]), changed=False)


def before_start(options: Any) -> Any:
    """server_process's gate: health.gather over `options` (gpus, fail_on, fail_hint) judged by judge(), the
    refusal carrying it as `health`; None without options."""
    if not options:
        return None
    result = _health.gather(gpus=options["gpus"])
    return judge(result, options["fail_on"], options["fail_hint"], key="health")
