# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Trees, sessions and placement by GPU, on hand-built tables."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import scope
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo


def proc(pid, ppid, sid, argv="x", environ=None):
    return ProcInfo(pid, ppid, 1.0, "root", argv.split(" "), "p", "sleeping", sid=sid, environ=environ)


class FakeHoldings:
    def __init__(self, held, gpu_map=None):
        self._held = held
        self.gpu_map = gpu_map or scope.GpuMap(minors=range(8))

    def held(self, pid):
        return set(self._held.get(pid, ()))


#  1 init
#  10 tmux server (matches; session 10)
#     11 pane A shell (session 11) -> 12 server (matches) -> 13 scheduler (holds 0)
#     21 pane B shell (session 21) -> 22 training job (holds 5)
#  30 launcher (matches; session 30) -> 31 child, same session (holds nothing)
TABLE = {p.pid: p for p in [
    proc(1, 0, 1), proc(10, 1, 10), proc(11, 10, 11), proc(12, 11, 11), proc(13, 12, 11),
    proc(21, 10, 21), proc(22, 21, 21), proc(30, 1, 30), proc(31, 30, 30)]}


def test_descent_stops_at_another_session_unless_it_holds_a_selected_gpu():
    held = {13: {0}, 22: {5}}
    trees = scope.matched_trees(TABLE, {10, 12, 30}, lambda pid: bool(set(held.get(pid, ())) & {0, 1}))
    assert trees == {10: {10}, 12: {12, 13}, 30: {30, 31}}
    # A process of another session that holds a selected GPU is entered (and what is below it).
    held = {13: {0}, 21: {5}}
    trees = scope.matched_trees(TABLE, {10, 12, 30}, lambda pid: bool(set(held.get(pid, ())) & {5}))
    assert trees[10] == {10, 21, 22}


def test_a_match_below_a_match_joins_its_tree():
    table = {p.pid: p for p in [proc(1, 0, 1), proc(5, 1, 5), proc(6, 5, 5), proc(7, 6, 5)]}
    assert scope.matched_trees(table, {5, 7}, lambda pid: False) == {5: {5, 6, 7}}


@pytest.mark.parametrize("held, environ, expected", [
    ({13: {4, 5}}, None, ({4, 5}, scope.PLACED_MEMORY)),
    ({}, {"CUDA_VISIBLE_DEVICES": "4,5"}, ({4, 5}, scope.PLACED_ENV)),
    ({}, {"CUDA_VISIBLE_DEVICES": "-1"}, (set(), scope.PLACED_ENV)),
    ({}, {"CUDA_VISIBLE_DEVICES": ""}, (set(), scope.PLACED_ENV)),
    ({}, {"CUDA_VISIBLE_DEVICES": "2,-1,3"}, ({2}, scope.PLACED_ENV)),   # CUDA stops at the invalid entry
    ({}, {"CUDA_VISIBLE_DEVICES": "GPU-bbb"}, ({1}, scope.PLACED_ENV)),
    ({}, {"CUDA_VISIBLE_DEVICES": "GPU-zzz"}, (None, scope.PLACED_ALL)),  # not a GPU NVML showed
    ({}, {"CUDA_VISIBLE_DEVICES": "MIG-1234"}, (None, scope.PLACED_ALL)),
    ({}, {"PATH": "/usr/bin"}, (None, scope.PLACED_ALL)),
    ({}, None, (None, scope.PLACED_ALL)),                                # environment unreadable
])
def test_place(held, environ, expected):
    gpu_map = scope.GpuMap([{"index": 0, "minor": 0, "uuid": "GPU-aaa"}, {"index": 1, "minor": 1, "uuid": "GPU-bbb"},
                            {"index": 4, "minor": 4, "uuid": "GPU-ccc"}, {"index": 5, "minor": 5, "uuid": "GPU-ddd"}],
                           minors=range(8))
    table = {12: proc(12, 1, 11, environ=environ), 13: proc(13, 12, 11, environ={})}
    assert scope.place({12, 13}, table, FakeHoldings(held, gpu_map)) == expected


def test_gpu_map_indices_and_minors_differ():
    gpu_map = scope.GpuMap([{"index": 0, "minor": 3, "uuid": "GPU-a"}, {"index": 1, "minor": 0, "uuid": "GPU-b"}])
    assert gpu_map.from_cvd("0") == {3}          # CUDA_VISIBLE_DEVICES names NVML indices
    assert gpu_map.indices({3, 0}) == [0, 1]
    assert gpu_map.from_cvd("GPU-b") == {0}


def test_in_use():
    def mib(rec, reserve):
        return (rec["used"], 0, 80000)
    records = [{"minor": 0, "used": 0, "processes": []}, {"minor": 1, "used": 0, "processes": [{"pid": 9}]},
               {"minor": 2, "used": 12, "processes": []}]
    assert scope.in_use(records, 1024, mib) == {1, 2}
