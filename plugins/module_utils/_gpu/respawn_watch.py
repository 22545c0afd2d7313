# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The respawn watch: who could come back after the release, for how long to look, and who restarts.

Each released process is watched for `respawn_settle` seconds from its own exit,
while the GPU memory drains (the release loop rescans between its NVML reads),
not after it. A process whose parent and every ancestor up to init were released
in the same run has nobody left to restart it (init aside: a systemd unit with
Restart= counts as its restarter), so it is not watched at all; one rescan after
the last exit still runs, for children a process forked on its way out.

The nearest ancestor that survives is looked at once (_restarters): a shell
running a loop, supervisord, runit, s6, or systemd with Restart= is named at
once, even when its pause (`sleep 1`) is longer than any watch.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import restarters as _restarters
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import read_one

NOT_RESTARTERS = ("self", "ancestor", "ansible")  # this run's own chain restarts no server


class _Entry:
    def __init__(self, target, table, protection):
        self.target = target
        self.chain = _restarters.ancestry(table, target.pid)
        self.protection = protection
        # Read while it runs: the cgroup tells the systemd unit, which init alone cannot.
        self.unit = _restarters.service_unit(target.pid, target.info.proc_root) \
            if self.chain and self.chain[-1].pid == 1 else None
        self.survivor = None
        self.kind = None
        self.start = self.end = None


class RespawnWatch:
    def __init__(self, settle: float) -> None:
        self.settle = float(settle)
        self.entries = []
        self.released = set()
        self.watched, self.skipped = [], []
        self.until = None
        self.last_scan = None
        self.rescans = 0
        self.last_exit = None

    def note(self, targets: list, table: dict, protection: Any) -> None:
        """Before the signals: the targets and their ancestry as the snapshot shows it."""
        for target in targets:
            if not target.gone:
                self.released.add(target.pid)
                self.entries.append(_Entry(target, table, protection))

    def arm(self, now: float) -> None:
        """After the signals: each signalled target's window, from its own exit, or no window."""
        ends = []
        for entry in self.entries:
            target = entry.target
            if not target.signals:
                continue
            gone = target.gone_at if target.gone_at is not None else now
            self.last_exit = gone if self.last_exit is None else max(self.last_exit, gone)
            survivor = next((a for a in entry.chain if a.pid not in self.released), None)
            entry.survivor = survivor
            if survivor is not None and entry.protection.reason(survivor.pid) not in NOT_RESTARTERS:
                entry.kind = _restarters.restarter_kind(survivor, entry.unit)
            if survivor is None or (survivor.pid == 1 and entry.kind is None):
                self.skipped.append(entry)
                continue
            entry.start, entry.end = gone, gone + self.settle
            ends.append(entry.end)
            self.watched.append(entry)
        self.until = max(ends) if ends else None

    def due(self, now: float, poll: float) -> bool:
        """Whether a rescan is due now: none since the last exit, `poll` s since the last one
        while a window is open, or the last window's end reached (its closing rescan)."""
        if not self.scanned_after_exits():
            return True
        if self.until is None or self.last_scan >= self.until:
            return False
        return now - self.last_scan >= poll or now >= self.until

    def scanned_after_exits(self) -> bool:
        return self.last_scan is not None and (self.last_exit is None or self.last_scan >= self.last_exit)

    def scanned(self, now: float) -> None:
        self.last_scan = now
        self.rescans += 1

    def live_restarters(self) -> list:
        """[(survivor ProcInfo, kind, [entries])] for restarters still running now."""
        found = {}
        for entry in self.watched:
            if entry.kind is None:
                continue
            key = entry.survivor.pid
            if key not in found:
                now = read_one(key, proc_root=entry.survivor.proc_root)
                if now is None or abs(now.create_time - entry.survivor.create_time) > 0.01:
                    continue  # it ended too
                found[key] = (entry.survivor, entry.kind, [])
            found[key][2].append(entry)
        return [found[k] for k in sorted(found)]

    def report(self) -> dict:
        end = self.last_scan
        watched = []
        for entry in self.watched:
            rec = dict(_named(entry.target), parent_pid=entry.survivor.pid,
                       watched_s=round(max(0.0, (min(end, entry.end) if end else entry.start) - entry.start), 3))
            if entry.kind:
                rec["restarter"] = entry.kind
            watched.append(rec)
        return {"settle": self.settle, "rescans": self.rescans, "watched": watched,
                "skipped": [dict(_named(e.target),
                                 why="its parent and every ancestor up to init were released in this run")
                            for e in self.skipped]}


def _named(target):
    # What was read while it ran: /proc has nothing more to say about a process that ended.
    return {"pid": target.pid, "cmdline": target.cmdline or target.info.cmdline}


def restarter_message(found: list) -> str:
    parts = []
    for survivor, kind, entries in found:
        parts.append("pid %d (%s, user %s) is %s and started pid %s (%s), which it will start again"
                     % (survivor.pid, survivor.cmdline[:120], survivor.user, kind,
                        ", ".join(str(e.target.pid) for e in entries), entries[0].target.cmdline[:120]))
    return ("GPUs not released for good: %s; stop that supervisor first (end the loop, supervisorctl stop, "
            "sv down, s6-svc -d, systemctl stop), then run gpu_release again" % "; ".join(parts))
