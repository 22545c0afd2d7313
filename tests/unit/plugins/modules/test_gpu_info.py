# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/gpu_info.py: the options it documents (the gpu fragment merged, as ansible-doc reads it) are
its real argument spec, names and defaults (tests/support/module_docs.py); run on the fake GPU kit, it
reports every GPU and the holder a test process is (the facts in detail: module_utils/_gpu/test_info.py)."""

from __future__ import annotations

import os

from simlib import fakegpu

from tests.support import module_docs
from tests.support.paths import SIM

HOLD = ("import sys; sys.path.insert(0, %r); from simlib import fakegpu; "
        "fakegpu.hold(sys.argv[1], [int(sys.argv[2])], int(sys.argv[3])); "
        "print('ready', flush=True); sys.stdin.read()" % SIM)


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("gpu_info") == []


def test_reports_every_gpu_and_its_holder_on_the_fake_kit(tmp_path, own_procs):
    root = str(tmp_path / "gpu")
    fakegpu.init(root, gpus=2)
    holder = own_procs.python(HOLD, root, 1, 700)
    assert holder.stdout.readline().strip() == "ready"
    res = module_docs.run("gpu_info", {}, env=dict(os.environ, **fakegpu.env(root)))
    assert res["_rc"] == 0 and res["changed"] is False, res.get("msg")
    assert [(g["index"], g["used_mib"]) for g in res["gpus"]] == [(0, 0.0), (1, 700.0)]
    assert [h["pid"] for h in res["gpus"][1]["holders"]] == [holder.pid]
