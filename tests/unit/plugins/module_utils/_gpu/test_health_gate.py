# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The health gate: which verdicts refuse at each fail_on, and what the refusal says and carries (gpu_health's
fail_on through Ansible on the fake kit is in test_health.py, beside its other module case)."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import health_gate


def result(verdict, *reasons):
    return {"verdict": verdict, "reasons": list(reasons), "gpus": []}


@pytest.mark.parametrize("fail_on, verdict, refused", [
    ("never", "fail", False), ("fail", "warn", False), ("fail", "unknown", False), ("fail", "fail", True),
    ("warn", "pass", False), ("warn", "warn", True), ("warn", "fail", True),
])
def test_fail_on_refuses_at_that_verdict_and_worse(fail_on, verdict, refused):
    given = result(verdict, "GPU 3 x: y")
    if not refused:
        assert health_gate.judge(given, fail_on) is given
        return
    with pytest.raises(GpuFleetError) as info:
        health_gate.judge(given, fail_on, "Set x_allow to true.", key="health")
    assert info.value.msg == "GPU health is %s, so nothing is started: GPU 3 x: y. Set x_allow to true." % verdict
    assert info.value.fail_fields()["health"] is given
