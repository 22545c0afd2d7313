# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/gpu_health.py: the options it documents are its real argument spec, names and defaults
(tests/support/module_docs.py); run on the fake GPU kit, it judges a healthy GPU pass and an injected
fault by DCGM's verdict (every check in detail: module_utils/_gpu/test_health.py)."""

from __future__ import annotations

import os

from simlib import fakegpu

from tests.support import module_docs


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("gpu_health") == []


def test_judges_each_gpu_of_the_fake_kit(tmp_path):
    root = str(tmp_path / "gpu")
    fakegpu.init(root, gpus=2)
    fakegpu.inject_health(root, 1, "ecc_dbe")
    args = {"expected_gpus": 2, "kernel_log": fakegpu.kernel_log(root)}
    res = module_docs.run("gpu_health", args, env=dict(os.environ, **fakegpu.env(root)))
    assert res["_rc"] == 0 and res["changed"] is False, res.get("msg")
    assert res["gpu_count"] == 2 and [(g["index"], g["verdict"]) for g in res["gpus"]] == [(0, "pass"), (1, "fail")]
    assert res["verdict"] == "fail"
    assert [r.split(":")[0] for r in res["reasons"]] == ["GPU 1 ecc_dbe_volatile"]
