# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MPS: what of a GPU's memory is the MPS server's own context."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import mps

MIB = 1048576


def record(*procs):
    return {"index": 0, "processes": [{"pid": pid, "used": None if mib is None else mib * MIB} for pid, mib in procs]}


def test_server_alone_counts_the_whole_gpu_figure():
    """The H200: 74 MiB used, the server alone listed at 66 MiB (MPS holds memory charged to no process)."""
    assert mps.overhead(record((2312, 66)), {2312}, 74.0) == \
        {"server_pids": [2312], "nvml_process_mib": 66.0, "used_mib": 74.0}


def test_memory_beyond_the_unattributed_room_is_not_excused():
    """A client's memory still being freed after its exit (NVML no longer lists it) is waited for."""
    assert mps.overhead(record((2312, 66)), {2312}, 4170.0)["used_mib"] == 66.0 + mps.UNATTRIBUTED_MIB


def test_beside_a_client_only_the_servers_own_figure_counts():
    assert mps.overhead(record((2312, 66), (4000, 4096)), {2312}, 4244.0)["used_mib"] == 66.0


def test_no_server_listed_is_no_mps_share():
    assert mps.overhead(record((4000, 4096)), {2312}, 4096.0) is None


def test_listed_servers_checks_only_the_pids_nvml_lists(monkeypatch):
    """A busy host's thousands of processes: only those NVML lists are checked for the server's
    executable, each once a table; a PID that was a server in an earlier table still counts."""
    checked = []

    def servers(table, exe_trusted=None):
        del exe_trusted
        checked.extend(table)
        return {pid: info for pid, info in table.items() if info == "server"}

    monkeypatch.setattr(mps, "servers", servers)
    found = mps.ListedServers()
    found.note({pid: "idle" for pid in range(1, 10000)} | {2312: "server"})
    assert found.of([record((2312, 66), (4000, 4096))]) == {2312: "server"}
    assert sorted(checked) == [2312, 4000]
    assert found.of([record((2312, 66))]) == {2312: "server"} and len(checked) == 2  # nothing read again
    found.note({4000: "idle"})  # a later snapshot: the server has gone from it
    assert found.of([record((2312, 66), (4000, 4096))]) == {2312: "server"}
    assert sorted(checked) == [2312, 4000, 4000]
