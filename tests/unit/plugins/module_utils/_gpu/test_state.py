# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_gpu/state.py: the per-GPU list from NVML records, the device-file scan of real processes on the
fake GPU kit, and the process table of this host."""

from __future__ import annotations

import os

import pytest
from simlib import fakegpu

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import holders as _holders
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import state
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.protect import Protection, compile_protect
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _table
from tests.support.paths import SIM

MIB = 1024 * 1024
HOLD = ("import sys; sys.path.insert(0, %r); from simlib import fakegpu; "
        "fakegpu.hold(sys.argv[1], [int(g) for g in sys.argv[2].split(',')], int(sys.argv[3])); "
        "print('ready', flush=True); sys.stdin.read()" % SIM)


def record(index, used_mib, processes=()):
    return {"index": index, "uuid": "GPU-%d" % index, "name": "NVIDIA H200", "minor": index, "memory_api": "v2",
            "total": 1000 * MIB, "used": used_mib * MIB, "reserved": 5 * MIB, "processes": list(processes)}


@pytest.fixture
def root(tmp_path):
    path = str(tmp_path / "gpu")
    fakegpu.init(path, gpus=2)
    yield path
    bounded_fs.close()  # the helper process the device-file scan started


@pytest.fixture
def holder(root, own_procs):
    proc = own_procs.python(HOLD, root, "1", 300, "gf-state-holder")
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_holders_are_device_file_users_and_nvml_processes_seen_here(root, holder, own_procs):
    module = own_procs.python("import sys; sys.stdin.read()")  # the module's process: not the holder's parent
    table = _table.snapshot()
    unseen = max(table) + 100000  # a PID NVML reports that this host's /proc does not show
    records = [record(0, 0), record(1, 300, [{"pid": holder.pid, "used": 300 * MIB}, {"pid": unseen, "used": None}])]
    protection = Protection(table, module.pid, compile_protect(["gf-state-holder"]))
    out = state.describe(records, _holders.scan(os.path.join(root, "dev")), table, protection, 1024)
    assert [g["index"] for g in out] == [0, 1]
    assert out[0]["holders"] == [] and out[0]["used_mib"] == 0.0 and out[0]["nvml_processes"] == []
    gpu = out[1]
    assert (gpu["total_mib"], gpu["used_mib"], gpu["reserved_mib"]) == (1000.0, 300.0, 5.0)
    assert [(h["pid"], h["protected"]) for h in gpu["holders"]] == [(holder.pid, "protect pattern")]
    assert gpu["holders"][0]["cmdline"].endswith("gf-state-holder")
    assert gpu["nvml_processes"] == [{"pid": holder.pid, "used_mib": 300.0}, {"pid": unseen, "used_mib": None}]


def test_our_own_process_tree_is_never_a_holder(root, holder):
    table = _table.snapshot()  # the holder is a child of this process: of "our" tree here
    out = state.describe([record(0, 0), record(1, 300, [{"pid": holder.pid, "used": 300 * MIB}])],
                         _holders.scan(os.path.join(root, "dev")), table, Protection(table, os.getpid()), 1024)
    assert out[1]["holders"] == [] and out[1]["nvml_processes"] == [{"pid": holder.pid, "used_mib": 300.0}]


def test_holder_record_adds_the_reason_only_when_there_is_one():
    info = _table.snapshot()[os.getpid()]
    assert "protected" not in state.holder_record(info)
    assert state.holder_record(info, "ancestor") == dict(info.as_dict(), protected="ancestor")
