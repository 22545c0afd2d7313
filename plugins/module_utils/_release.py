# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release loop behind gpu_release: plan, signal, wait, sweep, verify."""

from __future__ import annotations

import os
import time

from . import _holders, _proctable
from ._errors import GpuFleetError, InvalidInput, MissingLibrary
from ._gpu_select import check_against, parse_gpus
from ._gpu_state import describe, holder_record
from ._nvml import NvmlError, NvmlSession, NvmlTimeout, gpu_memory_mib
from ._patterns import compile_patterns, matches_any
from ._protect import Protection, compile_protect
from ._signals import Target, close_all, release

VERIFY_POLL = 0.02  # seconds between NVML reads while memory drains
STUCK_AFTER = 2.0  # seconds of unchanged memory before checking who still holds it


class ReleaseOptions:
    FIELDS = ("patterns", "gpus", "sweep", "protect", "term_timeout", "timeout",
              "max_used_mib", "devices", "verify", "force_broad", "sweep_users",
              "nvml_timeout", "v1_reserve_mib")

    def __init__(self, **kwargs):
        for name in self.FIELDS:
            setattr(self, name, kwargs.get(name))

    def validate(self):
        if self.term_timeout is None or self.term_timeout < 0:
            raise InvalidInput("term_timeout must be 0 (SIGKILL at once) or a positive number of seconds")
        if self.timeout is None or self.timeout <= 0:
            raise InvalidInput("timeout must be a positive number of seconds")
        if self.max_used_mib is None or self.max_used_mib < 0:
            raise InvalidInput("max_used_mib must be 0 or more")
        if not self.patterns and not self.sweep:
            raise InvalidInput("nothing to release: give patterns, or leave sweep enabled")


class Plan:
    """Who would be signalled, and who is spared, for one snapshot."""

    def __init__(self, table, protection, regexes, minors, opts, holders):
        self.table = table
        self.protection = protection
        self.pattern = {}
        matched = {pid for pid, info in table.items()
                   if info.argv and matches_any(regexes, info.cmdline) and not protection.reason(pid)}
        for pid in matched:
            self.pattern[pid] = "pattern"
        for pid in _proctable.descendants(table, matched):
            if pid not in self.pattern and not protection.reason(pid):
                self.pattern[pid] = "descendant"
        self.sweep = {}
        self.protected_holders = []
        if minors is not None:
            for pid in sorted(holders.holders_of(minors)):
                why = protection.reason(pid)
                if why:
                    if why not in ("self",) and pid in table:
                        self.protected_holders.append(holder_record(table[pid], why))
                elif pid not in self.pattern and pid in table and _user_ok(table[pid], opts.sweep_users):
                    self.sweep[pid] = "device"
        if not opts.sweep:
            self.sweep = {}

    def targets(self, which):
        return [Target(self.table[pid], reason) for pid, reason in sorted(which.items())]


def _user_ok(info, users):
    return not users or info.user in users


class Releaser:
    def __init__(self, opts, check_mode=False):
        opts.validate()
        self.opts = opts
        self.check_mode = check_mode
        self.start = time.monotonic()
        self.deadline = self.start + float(opts.timeout)
        self.requested = parse_gpus(opts.gpus)
        self.devices = _holders.devices_dir(opts.devices)
        self.extra_protect = compile_protect(opts.protect)
        self.session = None

    # -- set-up ------------------------------------------------------------
    def _open_nvml(self):
        try:
            self.session = NvmlSession(self.opts.nvml_timeout)
        except (MissingLibrary, NvmlError, NvmlTimeout):
            if self.opts.verify:
                raise
            self.session = None

    def _select(self):
        """(indices, minors, before-records) for the selected GPUs."""
        if self.session is not None:
            indices = check_against(self.requested, self.session.count)
            before = self.session.snapshot(indices)
            return indices, [r["minor"] for r in before], before
        # Without NVML (verify: false) the device files name the GPUs.
        present = sorted(int(n[6:]) for n in os.listdir(self.devices) if n[6:].isdigit() and n.startswith("nvidia"))
        indices = self.requested if self.requested is not None else present
        return indices, list(indices), []

    def _plan(self, minors):
        table = _proctable.snapshot()
        protection = Protection(table, os.getpid(), self.extra_protect)
        regexes = compile_patterns(self.opts.patterns, self.opts.force_broad)
        holders = _holders.scan(self.devices) if self.opts.sweep or minors else _holders.DeviceHolders()
        return Plan(table, protection, regexes, minors, self.opts, holders)

    # -- the run -----------------------------------------------------------
    def run(self):
        try:
            return self._run()
        finally:
            if self.session is not None:
                self.session.close()

    def _run(self):
        self._open_nvml()
        indices, minors, before = self._select()
        plan = self._plan(minors)
        result = {"gpus_selected": indices, "killed": [], "failed_to_kill": [],
                  "protected_holders": plan.protected_holders, "devices": self.devices}
        if self.check_mode:
            planned = plan.targets(plan.pattern) + plan.targets(plan.sweep)
            live = [t for t in planned if not t.gone]
            result["killed"] = [dict(t.result(), signals=[]) for t in live]
            close_all(planned)
            result["changed"] = bool(live)
            result["gpus"] = self._gpu_report(before, None, plan)
            return self._finish(result)

        timings = {}
        first = plan.targets(plan.pattern)
        t0 = time.monotonic()
        stuck = release(first, self.opts.term_timeout, self.deadline)
        timings["pattern"] = round(time.monotonic() - t0, 3)
        done = list(first)
        if self.opts.sweep:
            t0 = time.monotonic()
            # Rescan: orphans and late children show up as device holders now.
            again = self._plan(minors)
            handled = {(t.pid, t.info.create_time) for t in first}
            sweep = {pid: why for pid, why in again.sweep.items()
                     if (pid, again.table[pid].create_time) not in handled}
            swept = again.targets(sweep)
            stuck += release(swept, self.opts.term_timeout, self.deadline)
            done += swept
            result["protected_holders"] = again.protected_holders
            plan = again
            timings["sweep"] = round(time.monotonic() - t0, 3)
        result["killed"] = [t.result() for t in done if t.signals]
        result["failed_to_kill"] = [dict(t.result(), state=t.state()) for t in stuck]
        result["changed"] = any(t.signals for t in done)
        close_all(done)

        after = None
        if self.opts.verify:
            t0 = time.monotonic()
            after = self._wait_drained(indices, minors)
            timings["verify"] = round(time.monotonic() - t0, 3)
            plan = self._plan(minors)  # who still holds what, for the report
        result["timings"] = timings
        result["gpus"] = self._gpu_report(before, after, plan)
        return self._finish(result)

    def _wait_drained(self, indices, minors):
        """Poll NVML until every selected GPU is free, or the deadline.

        Gives up early when memory has stopped changing for STUCK_AFTER seconds
        and every GPU still in use is held only by protected processes: nothing
        this module may signal is left, so waiting out the timeout helps nobody.
        """
        limit = self.opts.max_used_mib
        last_used, last_change, last_look = None, time.monotonic(), 0.0
        while True:
            records = self.session.snapshot(indices)
            used = [gpu_memory_mib(r, self.opts.v1_reserve_mib)[0] for r in records]
            if all(u <= limit for u in used):
                return records
            now = time.monotonic()
            if now >= self.deadline:
                return records
            if used != last_used:
                last_used, last_change = used, now
            elif now - last_change >= STUCK_AFTER and now - last_look >= STUCK_AFTER:
                last_look = now
                if self._only_protected_hold(records, minors, limit):
                    return records
            time.sleep(VERIFY_POLL)

    def _only_protected_hold(self, records, minors, limit):
        plan = self._plan(minors)
        holders = _holders.scan(self.devices)
        for rec, minor in zip(records, minors):
            if gpu_memory_mib(rec, self.opts.v1_reserve_mib)[0] <= limit:
                continue
            pids = holders.holders_of([minor]) - plan.protection.own_tree
            if not pids or any(not plan.protection.reason(p) for p in pids):
                return False  # an invisible or killable holder: its memory may still go
        return True

    def _gpu_report(self, before, after, plan):
        """Per selected GPU: memory before and after, and who holds it now."""
        holders = _holders.scan(self.devices)
        now = describe(after if after is not None else before, holders, plan.table,
                       plan.protection, self.opts.v1_reserve_mib)
        was = {g["index"]: g for g in describe(before, _holders.DeviceHolders(), plan.table,
                                               plan.protection, self.opts.v1_reserve_mib)}
        out = []
        for gpu in now:
            prior = was[gpu["index"]]
            entry = {key: gpu[key] for key in ("index", "uuid", "name", "memory_api", "total_mib", "holders")}
            entry["before"] = {"used_mib": prior["used_mib"], "reserved_mib": prior["reserved_mib"]}
            entry["after"] = None
            if after is not None:
                entry["after"] = {"used_mib": gpu["used_mib"], "reserved_mib": gpu["reserved_mib"]}
                entry["free"] = gpu["used_mib"] <= self.opts.max_used_mib
            out.append(entry)
        return out

    def _finish(self, result):
        result["elapsed"] = round(time.monotonic() - self.start, 3)
        problems = []
        for t in result["failed_to_kill"]:
            problems.append("pid %d (%s, state %s, user %s) did not exit within the timeout of %ss"
                            % (t["pid"], t["cmdline"][:120], t["state"], t["user"], self.opts.timeout))
        for gpu in result.get("gpus", []):
            if gpu.get("free") is False:
                who = ", ".join(_describe_holder(h) for h in gpu["holders"]) or \
                    "no process visible here (another PID namespace or a stuck context?)"
                problems.append("GPU %d (%s) still has %.0f MiB used after %.1f s; holders: %s"
                                % (gpu["index"], gpu["uuid"], gpu["after"]["used_mib"], result["elapsed"], who))
        if problems:
            raise GpuFleetError("GPUs not released: " + "; ".join(problems), result=result)
        return result


def _describe_holder(holder):
    text = "pid %d (%s, state %s" % (holder["pid"], holder["cmdline"][:80], holder["state"])
    if holder.get("protected"):
        text += ", protected: " + holder["protected"]
    return text + ")"
