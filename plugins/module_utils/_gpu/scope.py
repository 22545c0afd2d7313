# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which pattern-matched trees a release may touch, and on which GPUs they sit.

A matched tree is a pattern match with its descendants. The descent stops at
a process whose session differs from its parent's (another tmux or screen pane, a process that
called setsid) unless that process matches a pattern itself or holds a
selected GPU: a tmux server whose argv holds the launch command must not take
the training job in another tmux session along.

With a GPU subset (`gpus: [0, 1, 2, 3]`) a tree is released only when it sits
on a selected GPU, and every GPU it sits on is then verified too. Where a tree
sits:

1. the GPUs its processes map (by device identity, _holders) or that NVML
   lists them on: `placed_by: memory`;
2. else, for a tree not holding memory yet (a server still loading), the
   CUDA_VISIBLE_DEVICES of its processes, read from /proc/PID/environ (NVML
   indices, or GPU UUIDs; "-1" or "" places it on none): `placed_by:
   CUDA_VISIBLE_DEVICES`. /proc/PID/environ is the environment at exec; a
   process that retitled itself (setproctitle, as SGLang's schedulers do) has
   overwritten it and tells nothing, so the tree's other processes (the
   launch_server parent) are read too; an entry such as MIG-... that cannot be
   placed counts as every GPU;
3. else (no memory, no readable CUDA_VISIBLE_DEVICES): CUDA shows such a
   process every GPU, so it counts as sitting on all of them and is released
   (`placed_by: no placement, counts as every GPU`).

A tree sitting only on unselected GPUs is left alone and reported in
`skipped_trees` with its GPUs.

Maps and environments are read only for the processes that need them (tree
members, and the device sweep's scan only while a selected GPU is in use), so
a no-op on a host with thousands of idle processes stays cheap.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import holders as _holders
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable

PLACED_MEMORY = "memory"
PLACED_ENV = "CUDA_VISIBLE_DEVICES"
PLACED_ALL = "no placement, counts as every GPU"


class GpuMap:
    """NVML index <-> device minor <-> UUID, from NVML records (or minors alone)."""

    def __init__(self, records: list | tuple = (), minors: Any = ()) -> None:
        self.index_of = {}
        self.minor_of = {}
        self.uuid_to_minor = {}
        for rec in records:
            self.add(rec["index"], rec["minor"], rec.get("uuid"))
        for minor in minors:  # without NVML the device files name the GPUs
            if minor not in self.index_of:
                self.add(minor, minor, None)

    def add(self, index: int, minor: int, uuid: str | None) -> None:
        self.index_of[minor] = index
        self.minor_of[index] = minor
        if uuid:
            self.uuid_to_minor[uuid] = minor

    def indices(self, minors: set) -> list:
        """NVML indices for minors (a minor NVML did not name is taken as its index)."""
        return sorted(self.index_of.get(m, m) for m in minors)

    def from_cvd(self, value: str) -> set | None:
        """Minors named by a CUDA_VISIBLE_DEVICES value; None when it cannot be placed."""
        out = set()
        for item in value.split(","):
            item = item.strip()
            if item == "":
                continue
            if item.lstrip("-").isdigit():
                if int(item) < 0:
                    break  # CUDA stops at the first invalid entry: "-1" hides every GPU
                out.add(self.minor_of.get(int(item), int(item)))
            elif item.startswith("GPU-"):
                match = [m for u, m in self.uuid_to_minor.items() if u.startswith(item)]
                if len(match) != 1:
                    return None  # a UUID (prefix) of a GPU NVML did not show us
                out.add(match[0])
            else:
                return None  # MIG-... or anything else: not placeable here
        return out


class Holdings:
    """Device holdings read lazily per process, and NVML's process lists."""

    def __init__(self, devices: Any, table: Any, nvml_records: tuple = (), gpu_map: Any = None, proc_root: str = "/proc") -> None:
        self.devices = devices
        self.table = table
        self.proc_root = proc_root
        self.ids = _holders.DeviceIds(devices)
        self.gpu_map = gpu_map or GpuMap()
        self._mapped = {}
        self._full = None
        self._thorough = False
        self.nvml = {}  # pid -> minors NVML lists it on (compute or graphics)
        for rec in nvml_records:
            for proc in rec.get("processes", ()):
                self.nvml.setdefault(proc["pid"], set()).add(rec["minor"])

    def mapped(self, pid: Any) -> Any:
        """Minors `pid` maps (its threads' maps when its leader has exited)."""
        if self._full is not None and self._thorough:
            return self._full.gpus.get(pid, set())
        if pid not in self._mapped:
            found = _holders.scan(self.devices, self.proc_root, pids=[pid], fds=False, ids=self.ids,
                                  table=self.table)
            self._mapped[pid] = found.gpus.get(pid, set())
        return self._mapped[pid]

    def held(self, pid: Any) -> Any:
        """Minors a process sits on: mapped, or listed by NVML."""
        return self.mapped(pid) | self.nvml.get(pid, set())

    def full(self, thorough: bool = True) -> Any:
        """Every visible process's mappings and fds.

        thorough: every process's maps (the device sweep, while a selected GPU
        is in use: a process may map a device and close its fd). Otherwise maps
        only of processes with a device file open or listed by NVML (CUDA keeps
        its device fds open): the cheap scan for the report of idle GPUs.
        """
        if self._full is None or (thorough and not self._thorough):
            self._full = _holders.scan(self.devices, self.proc_root, pids=sorted(self.table), ids=self.ids,
                                       table=self.table, maps_all=thorough, also=self.nvml)
            self._thorough = thorough
        return self._full

    def holders_of(self, minors: Any, scan_all: Any) -> Any:
        """PIDs that map one of `minors` (when scan_all) or that NVML lists on one."""
        minors = set(minors)
        found = {pid for pid, held in self.nvml.items() if held & minors}
        if scan_all:
            found |= self.full().holders_of(minors)
        return found


def in_use(records: list, v1_reserve_mib: int, gpu_memory_mib: Any) -> set:
    """Minors of the records that NVML shows as used (memory or a listed process)."""
    out = set()
    for rec in records:
        if rec.get("processes") or gpu_memory_mib(rec, v1_reserve_mib)[0] > 0:
            out.add(rec["minor"])
    return out


def matched_trees(table: dict, matched: set, holds_selected: Any) -> dict:
    """{root pid: set of member pids} for the matches, descent stopping at other sessions."""
    tree_of = {}
    trees = {}
    depth = {pid: len(_proctable.ancestors(table, pid)) for pid in matched}
    for pid in sorted(matched, key=lambda p: (depth[p], p)):
        root = tree_of.get(pid, pid)

        def stop(child):
            kid = table.get(child)
            parent = table.get(kid.ppid) if kid is not None else None
            if parent is None or kid.sid is None or parent.sid is None or kid.sid == parent.sid:
                return False  # no session boundary between the child and its parent
            return child not in matched and not holds_selected(child)

        members = {pid} | _proctable.descendants(table, [pid], stop=stop)
        trees.setdefault(root, set())
        for member in members:
            if member not in tree_of:
                tree_of[member] = root
                trees[root].add(member)
    return trees


def place(tree: Any, table: Any, holdings: Any) -> Any:
    """(minors, placed_by) for a tree: by memory, else CUDA_VISIBLE_DEVICES, else every GPU (None)."""
    held = set()
    for pid in tree:
        held |= holdings.held(pid)
    if held:
        return held, PLACED_MEMORY
    named, readable = set(), False
    for pid in sorted(tree):
        env = table[pid].environ
        if env is None or "CUDA_VISIBLE_DEVICES" not in env:
            continue
        minors = holdings.gpu_map.from_cvd(env["CUDA_VISIBLE_DEVICES"])
        if minors is None:
            return None, PLACED_ALL
        readable = True
        named |= minors
    if readable:
        return named, PLACED_ENV
    return None, PLACED_ALL


def skipped_record(root: Any, tree: Any, table: Any, minors: Any, placed_by: Any, gpu_map: Any) -> Any:
    info = table[root]
    return {"pid": root, "user": info.user, "cmdline": info.cmdline,
            "pids": sorted(tree), "gpus": gpu_map.indices(minors), "placed_by": placed_by}
