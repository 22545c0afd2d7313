# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release loop behind gpu_release: plan, signal, wait, sweep, verify."""

from __future__ import annotations

import math
import os
import pwd
import time
from typing import Any, NamedTuple

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput, MissingLibrary
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import health as _health
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import holders as _holders
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import mps as _mps
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import reset as _reset
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import respawn_watch as _watch
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import scope as _scope
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import finite, known_users, regex_list
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import NvmlError, NvmlSession, NvmlTimeout, gpu_memory_mib
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import compile_patterns, engine_patterns, matches_any
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.protect import Protection, compile_protect
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.selection import check_against, parse_gpus
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.state import describe, holder_record
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.match_bounded import BoundedMatcher
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.signals import Target, close_all, release
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.threads import group_cmdline, group_state
from ansible_collections.gpufleet.serving.plugins.module_utils._safe_text import clean

VERIFY_POLL = 0.02  # seconds between NVML reads while memory drains
STUCK_AFTER = 2.0  # seconds of unchanged memory before checking who still holds it
# A run that has found nothing to signal in any pass reuses its last snapshot for
# passes made within this many seconds (the no-op's rescan and report): nothing was
# signalled, so nothing of ours can have changed; a run that ever had a target never does.
QUIET_REUSE = 0.25
RESPAWN_SETTLE = 0.5  # default seconds after each target is gone in which nothing may reappear
RESPAWN_POLL = 0.1  # seconds between rescans for respawns
MPS_OVERHEAD, MPS_QUIT = "overhead", "quit"  # the mps option's choices


class ReleaseOptions:
    FIELDS = ("patterns", "gpus", "sweep", "protect", "term_timeout", "timeout",
              "max_used_mib", "devices", "verify", "force_broad", "sweep_users",
              "nvml_timeout", "v1_reserve_mib", "respawn_settle", "mps", "reset_stuck")

    def __init__(self, **kwargs: Any) -> None:
        for name in self.FIELDS:
            setattr(self, name, kwargs.get(name))

    def validate(self) -> None:
        if self.term_timeout is None or self.term_timeout < 0 or math.isnan(self.term_timeout):
            raise InvalidInput("term_timeout must be 0 (SIGKILL at once) or a positive number of seconds")
        finite(self.timeout, "timeout must be a positive number of seconds", strict=True)
        finite(self.max_used_mib, "max_used_mib must be 0 or more")
        if self.nvml_timeout is not None:
            finite(self.nvml_timeout, "nvml_timeout must be a positive number of seconds "
                   "(0 would fail every NVML request at once)", strict=True)
        if self.v1_reserve_mib is not None:
            finite(self.v1_reserve_mib, "v1_reserve_mib must be 0 or more")
        known_users(self.sweep_users)
        if self.respawn_settle is None:
            self.respawn_settle = RESPAWN_SETTLE
        finite(self.respawn_settle, "respawn_settle must be 0 or more seconds")
        if self.mps is None:
            self.mps = MPS_OVERHEAD
        if self.mps not in (MPS_OVERHEAD, MPS_QUIT):
            raise InvalidInput("mps must be %r (count the MPS server's context as daemon overhead) or %r "
                               "(stop MPS with its control command, then verify zero); got %r"
                               % (MPS_OVERHEAD, MPS_QUIT, self.mps))
        if self.reset_stuck and not self.verify:
            raise InvalidInput("reset_stuck: true needs verify: true (only NVML tells which GPUs stay used with no "
                               "process); set verify: true, or leave reset_stuck out")
        if not self.patterns and not self.sweep:
            raise InvalidInput("nothing to release: give patterns or engine, or leave sweep enabled")


# Protection reasons (_gpu/protect.py) that mean "this is the Ansible run itself".
SPARED_ANSIBLE = ("ansible", "ancestor", "copy of an ancestor")


class Plan:
    """Who would be signalled, and who is spared, for one snapshot.

    `holders` is a _scope.Holdings; `minors` the selected GPUs' minors; with
    `scoped` (a GPU subset) a matched tree is released only when it sits on a
    selected GPU (_scope); `busy`: minors NVML shows in use (None without NVML),
    the device sweep scans /proc only while one of the selected GPUs is busy.
    """

    def __init__(self, table: Any, protection: Any, regexes: Any, minors: Any, opts: Any, holders: Any, scoped: bool = False, busy: Any = None) -> None:
        self.table = table
        self.protection = protection
        self.holdings = holders
        self.pattern = {}
        self.skipped_trees = []
        self.tree_minors = set()  # GPUs the released trees sit on (verified too)
        selected = set(minors or ())
        # Candidates by the command line the pass read; kept when the record looked up now (its
        # stat and a fresh cmdline, the process pinned by its start time) still matches.
        hits = {pid for pid, cmdline in _proctable.command_lines(table) if matches_any(regexes, cmdline)}
        hits = {pid for pid in hits if pid in table and table[pid].argv and matches_any(regexes, table[pid].cmdline)}
        matched = {pid for pid in hits if not protection.reason(pid)}
        # Ansible's own processes whose command line carries a pattern (`ansible -a 'patterns=...'`,
        # ansible-runner, a forked worker): spared, and reported, so that a match nobody was
        # signalled for is explained.
        self.spared_ansible = [holder_record(table[pid], protection.reason(pid)) for pid in sorted(hits - matched)
                               if protection.reason(pid) in SPARED_ANSIBLE]
        # Other matches spared by what they are (a terminal multiplexer whose argv carries
        # the server's command line, a GPU daemon, a protect pattern): named in the result too.
        self.protected_matches = [holder_record(table[pid], protection.reason(pid)) for pid in sorted(hits - matched)
                                  if protection.reason(pid) not in SPARED_ANSIBLE + ("self", "init")]
        trees = _scope.matched_trees(table, matched, lambda pid: bool(holders.held(pid) & selected))
        for root, tree in sorted(trees.items()):
            if scoped:
                where, placed_by = _scope.place({p for p in tree if not protection.reason(p)} or tree,
                                                table, holders)
                if where is not None and not where & selected:
                    self.skipped_trees.append(_scope.skipped_record(root, tree, table, where, placed_by,
                                                                    holders.gpu_map))
                    continue
                if placed_by == _scope.PLACED_MEMORY:
                    self.tree_minors |= where
            for pid in tree:
                if not protection.reason(pid):
                    self.pattern[pid] = "pattern" if pid in matched else "descendant"
        self.sweep = {}
        self.protected_holders = []
        # Holders: processes that map a selected GPU (device identity) or that NVML lists on one.
        scan_all = busy is None or bool(busy & selected)
        for pid in sorted(holders.holders_of(selected, scan_all)):
            why = protection.reason(pid)
            if why:
                if why not in ("self",) and pid in table:
                    self.protected_holders.append(holder_record(table[pid], why))
            elif pid not in self.pattern and pid in table and _user_ok(table[pid], opts.sweep_users):
                self.sweep[pid] = "device"
        if not opts.sweep:
            self.sweep = {}

    def targets(self, which: Any) -> Any:
        return [Target(self.table[pid], reason) for pid, reason in sorted(which.items())]


def _user_ok(info, users):
    return not users or info.user in users


class Releaser:
    def __init__(self, opts: Any, check_mode: bool = False) -> None:
        opts.validate()
        self.opts = opts
        self.check_mode = check_mode
        self.start = time.monotonic()
        self.deadline = self.start + float(opts.timeout)
        bounded_fs.set_deadline(self.deadline)
        self.requested = parse_gpus(opts.gpus)
        self.devices = _holders.devices_dir(opts.devices)
        self.extra_protect = compile_protect(opts.protect)
        self.session = None
        self.matcher = None
        self.watch, self.respawn, self.handled = None, None, set()
        self.mps_servers = _mps.ListedServers()  # the MPS servers NVML lists, in any snapshot of this run

    # -- set-up ------------------------------------------------------------
    def _open_nvml(self):
        try:
            self.session = NvmlSession(self.opts.nvml_timeout)
        except (MissingLibrary, NvmlError, NvmlTimeout):
            if self.opts.verify:
                raise
            self.session = None

    def _select(self):
        """(indices, minors, before-records) for the selected GPUs.

        With a GPU subset, the GPUs that a pattern-matched tree to be released
        also sits on are added (_scope): they are verified and reported too.
        """
        if self.session is not None:
            indices = check_against(self.requested, self.session.count)
            before = self.session.snapshot(indices)
            minors = [r["minor"] for r in before]
        else:
            # Without NVML (verify: false) the device files name the GPUs.
            present = sorted(int(n[6:]) for n in os.listdir(self.devices) if n[6:].isdigit() and n.startswith("nvidia"))
            indices = self.requested if self.requested is not None else present
            before, minors = [], list(indices)
        self.scope = _ScopeState(indices, minors, before, self.session if self.requested is not None else None)
        if self.requested is None:
            return indices, minors, before
        self.scope.first_plan = plan = self._plan(minors)
        self.scope.skipped_trees = plan.skipped_trees
        extra = sorted(plan.tree_minors - set(minors))
        if not extra:
            return indices, minors, before
        if self.session is None:
            self.scope.added = list(extra)
            return indices + extra, minors + extra, before
        # Verified as well: the released trees' other GPUs that nobody else uses.
        added = [r for r in self.scope.records_for(extra)
                 if all(p["pid"] in plan.pattern for p in r["processes"])]
        self.scope.added = [r["index"] for r in added]
        return indices + [r["index"] for r in added], minors + [r["minor"] for r in added], before + added

    def _plan(self, minors):
        scope = self.scope
        if scope.first_plan is not None:
            plan, scope.first_plan = scope.first_plan, None
            return plan
        del minors  # the sweep always takes the selected GPUs; added ones are only verified
        quiet = scope.quiet_plan
        if quiet is not None and time.monotonic() - quiet[0] <= QUIET_REUSE:
            return quiet[1]  # nothing to signal so far in this run, and a moment ago
        plan = self._new_plan()
        if scope.quiet and not plan.pattern and not plan.sweep:
            scope.quiet_plan = (time.monotonic(), plan)
        else:
            scope.quiet, scope.quiet_plan = False, None
        return plan

    def _new_plan(self):
        scope = self.scope
        table = _proctable.cmdline_snapshot()
        self._bounded_match(table)
        self.mps_servers.note(table)
        protection = Protection(table, os.getpid(), self.extra_protect)
        regexes = compile_patterns(self.opts.patterns, self.opts.force_broad)
        records = self.session.snapshot(scope.indices) if self.session is not None else None
        holdings = _scope.Holdings(self.devices, table, records or (), scope.gpu_map)
        busy = None if records is None else _scope.in_use(records, self.opts.v1_reserve_mib, gpu_memory_mib)
        return Plan(table, protection, regexes, scope.minors, self.opts, holdings,
                    scoped=self.requested is not None, busy=busy)

    def _bounded_match(self, table):
        """Fail, naming the pattern, if matching this table could run past the budget (_match_bounded)."""
        if self.matcher is None:
            self.matcher = BoundedMatcher(compile_patterns(self.opts.patterns, self.opts.force_broad)
                                          + list(self.extra_protect))
        self.matcher.check([cmdline for _pid, cmdline in _proctable.command_lines(table)], self.deadline)

    # -- the run -----------------------------------------------------------
    def run(self) -> dict:
        try:
            result = self._run()
        except GpuFleetError as exc:
            self._scope_result(exc.result)
            # Every string Ansible gets must be UTF-8, whatever a process calls itself.
            exc.msg = clean(exc.msg)
            exc.args = (exc.msg,)
            if exc.result is not None:
                exc.result = clean(exc.result)
            raise
        finally:
            if self.session is not None:
                self.session.close()
            bounded_fs.close()
        return clean(self._scope_result(result))

    def _scope_result(self, result):
        """skipped_trees, and the selection as asked (the GPUs added for released trees apart)."""
        scope = getattr(self, "scope", None)
        if result is not None and scope is not None:
            result["skipped_trees"] = scope.skipped_trees
            result["gpus_selected"] = list(scope.indices)
            result["gpus_added"] = list(scope.added)
            result["unresolved_holders"] = scope.unresolved
        return result

    def _run(self):
        self._open_nvml()
        indices, minors, before = self._select()
        plan = self._plan(minors)
        result = {"gpus_selected": indices, "killed": [], "failed_to_kill": [],
                  "protected_holders": plan.protected_holders, "devices": self.devices,
                  "spared_ansible": plan.spared_ansible, "protected_matches": plan.protected_matches}
        if self.check_mode:
            return self._finish(self._check_result(plan, before, minors, result))

        timings = {}
        watch = _watch.RespawnWatch(self.opts.respawn_settle)
        signalled = self._signal_pattern(plan, watch, result, timings)
        if self.opts.sweep:
            signalled = self._signal_sweep(signalled, minors, watch, result, timings)
        self._record_signals(signalled, result)
        if self.opts.mps == MPS_QUIT:
            self._quit_mps(indices, result)
        self._arm_watch(watch, signalled, result)
        after, plan = self._verify(indices, minors, signalled.plan, timings)
        result["gpus"] = self._gpu_report(before, after, plan)
        if self.opts.reset_stuck:
            self._reset_stuck(indices, after, result)
        result["timings"] = timings
        if self.watch is not None:
            t0 = time.monotonic()
            self._finish_watch(minors, result)
            # What the watch cost after the memory was free (or after the signals, without verify).
            timings["respawn_check"] = round(time.monotonic() - t0, 3)
        return self._finish(result)

    def _check_result(self, plan, before, minors, result):
        """Check mode: who a real run would signal (none is), and the GPUs it would leave used."""
        planned = plan.targets(plan.pattern) + plan.targets(plan.sweep)
        live = [t for t in planned if not t.gone]
        result["killed"] = [dict(t.result(), signals=[]) for t in live]
        close_all(planned)
        result["changed"] = bool(live)
        result["gpus"] = self._gpu_report(before, None, plan)
        result["predicted_failures"] = self._predict(before, minors, plan, {t.pid for t in planned})
        if self.opts.reset_stuck:
            result["reset"] = {"groups": [], "refused": [{"index": None, "reason": "check mode: no GPU is reset"}]}
        return result

    def _signal_pattern(self, plan, watch, result, timings):
        """The first pass: the pattern-matched trees of PLAN signalled (SIGTERM, SIGKILL after
        term_timeout). A refused signal fails the task here (_fail_if_denied)."""
        first = plan.targets(plan.pattern)
        watch.note(first, plan.table, plan.protection)
        t0 = time.monotonic()
        stuck = release(first, self.opts.term_timeout, self.deadline)
        self._fail_if_denied(first, result)
        timings["pattern"] = round(time.monotonic() - t0, 3)
        return Signalled(list(first), stuck, plan)

    def _signal_sweep(self, first, minors, watch, result, timings):
        """The device sweep after FIRST (the pattern pass): the selected GPUs' holders found by a
        new scan, less the processes the first pass already handled, signalled the same way."""
        t0 = time.monotonic()
        # Rescan: orphans and late children show up as device holders now.
        again = self._plan(minors)
        handled = {(t.pid, t.info.create_time) for t in first.done}
        sweep = {pid: why for pid, why in again.sweep.items()
                 if (pid, again.table[pid].create_time) not in handled}
        swept = again.targets(sweep)
        watch.note(swept, again.table, again.protection)
        stuck = first.stuck + release(swept, self.opts.term_timeout, self.deadline)
        self._fail_if_denied(first.done + swept, result)
        result["protected_holders"] = again.protected_holders
        timings["sweep"] = round(time.monotonic() - t0, 3)
        return Signalled(first.done + swept, stuck, again)

    def _record_signals(self, signalled, result):
        """The passes' outcome in RESULT: who was signalled, who outlived the timeout."""
        result["killed"] = [t.result() for t in signalled.done if t.signals]
        result["failed_to_kill"] = [dict(t.result(), state=t.state()) for t in signalled.stuck]
        result["changed"] = any(t.signals for t in signalled.done)
        close_all(signalled.done)

    def _arm_watch(self, watch, signalled, result):
        """Start the respawn watch when something was signalled and every target is gone."""
        # The respawn watch runs from each target's exit, between the NVML reads of the drain.
        self.watch = watch if result["changed"] and not signalled.stuck else None
        self.respawn = None
        if self.watch is not None:
            self.watch.arm(time.monotonic())
            self.handled = {(t.pid, t.info.create_time) for t in signalled.done}

    def _verify(self, indices, minors, plan, timings):
        """(the GPUs' records once drained or at the deadline, the plan to report holders from);
        without verify, (None, PLAN)."""
        if not self.opts.verify:
            return None, plan
        t0 = time.monotonic()
        after = self._wait_drained(indices, minors)
        timings["verify"] = round(time.monotonic() - t0, 3)
        return after, self._plan(minors)  # who still holds what, for the report

    # -- reset_stuck ------------------------------------------------------------
    def _reset_stuck(self, indices, after, result):
        """Reset the selected GPUs whose memory stays used with no process, where it is safe (_gpu/reset.py)."""
        records = {r["index"]: r for r in after}
        unused = {g["index"] for g in result["gpus"] if not g["holders"] and not records[g["index"]]["processes"]}
        stuck = [g["index"] for g in result["gpus"] if g.get("free") is False and g["index"] in unused]
        report = result["reset"] = {"groups": [], "refused": []}
        if not stuck:
            return
        reply = self.session.nvlink(list(range(self.session.count)))
        links = {r["index"]: r for r in reply["gpus"]}
        report["refused"] = [{"index": i, "reason": "NVML could not read its NVLink links: %s" % reply["errors"].get(str(i))}
                             for i in stuck if i not in links]
        groups, refused = _reset.plan([i for i in stuck if i in links], unused, set(indices), links)
        report["refused"] += refused
        if not groups:
            return
        # NVML keeps the device files open, and nvidia-smi -r refuses a GPU that a monitor has open.
        self.session.close()
        self.session = None
        report["groups"] = [_reset.run(group, self.deadline) for group in groups]
        self.session = NvmlSession(self.opts.nvml_timeout)
        done = sorted({i for g in report["groups"] if g["rc"] == 0 for i in g["gpus"]})
        if not done:
            return
        report["health"] = _reset.health_summary(_health.gather(gpus=done, nvml_timeout=self.opts.nvml_timeout))
        now = {r["index"]: r for r in self.session.snapshot(done)}
        for entry in result["gpus"]:
            rec = now.get(entry["index"])
            if rec is not None:
                used, reserved = gpu_memory_mib(rec, self.opts.v1_reserve_mib)[:2]
                entry["after"] = {"used_mib": used, "reserved_mib": reserved}
                entry["free"] = self._used(rec)[0] <= self.opts.max_used_mib
                entry["reset"] = True

    # -- promises: permission, respawns, check mode ----------------------------
    def _fail_if_denied(self, targets, result):
        """A signal refused with EPERM fails the task at once: waiting cannot help."""
        denied = [t for t in targets if t.denied]
        if not denied:
            return
        result["killed"] = [t.result() for t in targets if t.signals]
        result["failed_to_kill"] = [dict(t.result(), state=t.state()) for t in denied]
        result["changed"] = any(t.signals for t in targets)
        close_all(targets)
        result["elapsed"] = round(time.monotonic() - self.start, 3)
        if os.geteuid() == 0:
            hint = ("this module runs as root without the right to signal them (no CAP_KILL in this container, "
                    "or a security module refused): run it where root may signal these processes")
        else:
            hint = ("this module runs as %s: run the task with become: true (or as the owner of these processes)"
                    % _user_name(os.geteuid()))
        raise GpuFleetError(
            "not permitted to signal: %s; %s"
            % ("; ".join("pid %d (%s) of user %s" % (t.pid, t.result()["cmdline"][:120], t.info.user)
                         for t in denied), hint), result=result)

    def _mps_on_selected(self, indices):
        """The MPS servers holding memory on a selected GPU now, and their control daemons."""
        if self.session is None:
            return {}, {}
        table = _proctable.snapshot()
        servers = _mps.servers(table)
        self.mps_servers.note(table)
        holding = set()
        for rec in self.session.snapshot(indices):
            holding.update((_mps.overhead(rec, servers) or {}).get("server_pids", ()))
        controls = _mps.controls(table)
        return {p: servers[p] for p in holding}, {p: i for p, i in controls.items()
                                                  if any(s.ppid == p for s in servers.values() if s.pid in holding)}

    def _quit_mps(self, indices, result):
        """mps: quit. Stop each MPS daemon whose server holds a selected GPU, the documented way."""
        servers, controls = self._mps_on_selected(indices)
        if not servers:
            return
        if not controls:
            raise GpuFleetError(
                "mps: quit: the MPS server (pid %s) holds a selected GPU but its control daemon "
                "(nvidia-cuda-mps-control, its parent) is not visible here; stop MPS on the host "
                "(echo quit | nvidia-cuda-mps-control), or use mps: overhead"
                % ", ".join(str(p) for p in sorted(servers)), result=result)
        done = [_mps.quit_daemon(info, self.deadline) for _pid, info in sorted(controls.items())]
        result["mps"] = {"action": MPS_QUIT, "daemons": done}
        result["changed"] = True
        failed = [d for d in done if d.get("rc") != 0]
        if failed:
            raise GpuFleetError("mps: quit: %s" % "; ".join(
                "%s (pipe directory %s) failed: %s" % (d["command"], d["pipe_directory"], d.get("error") or "rc %s" % d["rc"])
                for d in failed), result=result)

    def _watch_tick(self, minors):
        """One rescan of the respawn watch when one is due; True once something came back."""
        watch, now = self.watch, time.monotonic()
        if watch is None or self.respawn is not None or not watch.due(now, RESPAWN_POLL):
            return self.respawn is not None
        plan = self._plan(minors)
        watch.scanned(now)
        back = {pid: why for pid, why in list(plan.pattern.items()) + list(plan.sweep.items())
                if (pid, plan.table[pid].create_time) not in self.handled}
        if back:
            self.respawn = (plan, back)
        return self.respawn is not None

    def _finish_watch(self, minors, result):
        """Rescan until every window is closed (never past the deadline); then name a live restarter."""
        watch = self.watch
        # Never past the deadline: the last rescan and the report must fit before it too.
        until = min(watch.until if watch.until is not None else 0.0, self.deadline - RESPAWN_POLL)
        while not self._watch_tick(minors):
            now = time.monotonic()
            if watch.scanned_after_exits() and (watch.last_scan >= until or now >= until):
                break
            time.sleep(max(0.0, min(watch.last_scan + RESPAWN_POLL, until) - now))
        result["respawn_watch"] = watch.report()
        if self.respawn is not None:
            self._fail_respawned(self.respawn[0], self.respawn[1], result)
        found = watch.live_restarters()
        if found:
            result["restarters"] = [dict(holder_record(survivor, None), kind=kind,
                                         started=[e.target.pid for e in entries])
                                    for survivor, kind, entries in found]
            result["elapsed"] = round(time.monotonic() - self.start, 3)
            raise GpuFleetError(_watch.restarter_message(found), result=result)

    def _fail_respawned(self, plan, back, result):
        now = time.time()
        records, parts = [], []
        for pid in sorted(back):
            info = plan.table[pid]
            parent = plan.table.get(info.ppid)
            rec = dict(holder_record(info, None), reason=back[pid], age=round(now - info.create_time, 3),
                       parent=None if parent is None else holder_record(parent, plan.protection.reason(parent.pid)))
            records.append(rec)
            if parent is None or info.ppid <= 1 or plan.protection.reason(info.ppid) in ("init", "ancestor", "self"):
                started_by = "its parent is gone (reparented to pid %d)" % info.ppid
            else:
                started_by = "restarted by pid %d (%s, user %s)" % (parent.pid, parent.cmdline[:120], parent.user)
            parts.append("pid %d (%s, user %s, %s) appeared %.2f s ago, %s"
                         % (pid, info.cmdline[:120], info.user, back[pid], rec["age"], started_by))
        result["respawned"] = records
        result["elapsed"] = round(time.monotonic() - self.start, 3)
        raise GpuFleetError(
            "GPUs not released: respawned after the release: %s; a supervisor (systemd, supervisord, a restart "
            "loop, the server's own parent) restarts it: stop that supervisor first, then run gpu_release again"
            % "; ".join(parts), result=result)

    def _predict(self, before, minors, plan, planned):
        """Check mode: the GPUs a real run would leave used, with who would still hold them.

        A GPU above max_used_mib fails when nothing visible holds it, or when the holders
        the real run would not signal hold more than max_used_mib by NVML's per-process
        count (a listed holder whose amount NVML cannot tell counts as holding; one NVML
        does not list, beside others it does, holds nothing, like a monitor). Where NVML
        lists no process visible here (another PID namespace), no failure is predicted.
        """
        if not self.opts.verify or not before:
            return []
        holders = _holders.scan(self.devices)
        out = []
        for rec, minor in zip(before, minors):
            used, share = self._used(rec)
            if share is not None and self.opts.mps == MPS_QUIT:
                used = max(0.0, used - share["used_mib"])  # the real run's quit frees it
            if used <= self.opts.max_used_mib:
                continue
            listed = {p["pid"]: p["used"] for p in rec["processes"] if p["pid"] in plan.table}
            mapped = (holders.holders_of([minor]) | set(listed)) - plan.protection.own_tree
            remain = sorted(p for p in mapped - planned if p in plan.table)
            if mapped and (not remain or not listed):
                continue
            if remain and all(listed.get(p, 0) is not None for p in remain) and \
                    sum(listed.get(p, 0) for p in remain) / 1048576.0 <= self.opts.max_used_mib:
                continue
            out.append({"index": rec["index"], "uuid": rec["uuid"], "used_mib": used,
                        "holders": [holder_record(plan.table[p], plan.protection.reason(p)) for p in remain]})
        return out

    def _wait_drained(self, indices, minors):
        """Poll NVML until every selected GPU is free, or the deadline.

        The respawn watch rescans between the reads (_watch_tick); a respawn ends the wait.
        Gives up early when memory has stopped changing for STUCK_AFTER seconds
        and every GPU still in use is held only by protected processes (with
        reset_stuck, or by no process at all): nothing this module may signal is
        left, so waiting out the timeout helps nobody.
        """
        limit = self.opts.max_used_mib
        last_used, last_change, last_look = None, time.monotonic(), 0.0
        while True:
            records = self.session.snapshot(indices)
            used = [self._used(r)[0] for r in records]
            if all(u <= limit for u in used) or self._watch_tick(minors):
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

    def _used(self, rec):
        """(MiB used as verified, the MPS servers' share on it or None).

        By default the MPS server's own context is daemon overhead: not counted."""
        used = gpu_memory_mib(rec, self.opts.v1_reserve_mib)[0]
        share = _mps.overhead(rec, self.mps_servers.of([rec]), used)
        if share is not None and self.opts.mps == MPS_OVERHEAD:
            used = max(0.0, used - share["used_mib"])
        return used, share

    def _only_protected_hold(self, records, minors, limit):
        plan = self._plan(minors)
        holders = _holders.scan(self.devices)
        for rec, minor in zip(records, minors):
            if self._used(rec)[0] <= limit:
                continue
            pids = holders.holders_of([minor]) - plan.protection.own_tree
            if self.opts.reset_stuck and not pids and not rec["processes"]:
                continue  # held by no process at all: waiting does not free it, reset_stuck's reset may
            if not pids or any(not plan.protection.reason(p) for p in pids):
                return False  # an invisible or killable holder: its memory may still go
        return True

    def _gpu_report(self, before, after, plan):
        """Per selected GPU: memory before and after, and who holds it now.

        Who has a device file open without memory (an NVML monitor) or maps an unknown
        nvidia file takes a look at every process's fds; a run that had nothing to signal
        on GPUs NVML shows idle before and after skips it: nothing holds them, and a busy
        host's no-op then reads each process's stat and cmdline once, nothing more.
        """
        idle = self.scope.quiet and not any(
            _scope.in_use(records, self.opts.v1_reserve_mib, gpu_memory_mib) for records in (before, after or []))
        holders = _holders.DeviceHolders() if idle else plan.holdings.full(thorough=False)
        self.scope.unresolved = [dict(holder_record(plan.table[pid]), paths=sorted(paths))
                                 for pid, paths in sorted(holders.unresolved.items()) if pid in plan.table]
        now = describe(after if after is not None else before, holders, plan.table,
                       plan.protection, self.opts.v1_reserve_mib)
        was = {g["index"]: g for g in describe(before, _holders.DeviceHolders(), plan.table,
                                               plan.protection, self.opts.v1_reserve_mib)}
        out = []
        records = {r["index"]: r for r in (after if after is not None else before)}
        for gpu in now:
            prior = was[gpu["index"]]
            verified, share = self._used(records[gpu["index"]])
            entry = {key: gpu[key] for key in ("index", "uuid", "name", "memory_api", "total_mib", "holders")}
            entry["before"] = {"used_mib": prior["used_mib"], "reserved_mib": prior["reserved_mib"]}
            entry["after"] = None
            if after is not None:
                entry["after"] = {"used_mib": gpu["used_mib"], "reserved_mib": gpu["reserved_mib"]}
                entry["free"] = verified <= self.opts.max_used_mib
            if share is not None:
                entry["mps"] = dict(share, counted=("as daemon overhead" if self.opts.mps == MPS_OVERHEAD
                                                    else "as used"))
            out.append(entry)
        return out

    def _finish(self, result):
        result["elapsed"] = round(time.monotonic() - self.start, 3)
        problems = []
        for gpu in result.get("predicted_failures") or []:
            who = ", ".join(_describe_holder(h) for h in gpu["holders"]) or \
                "no process visible here (another PID namespace or a stuck context?)"
            problems.append("GPU %d (%s) would still have %.0f MiB used after a real run (check mode); "
                            "holders that would not be signalled: %s" % (gpu["index"], gpu["uuid"], gpu["used_mib"], who))
        for t in result["failed_to_kill"]:
            problems.append("pid %d (%s, state %s, user %s) did not exit within the timeout of %ss"
                            % (t["pid"], t["cmdline"][:120], t["state"], t["user"], self.opts.timeout))
        for gpu in result.get("gpus", []):
            if gpu.get("free") is False:
                who = ", ".join(_describe_holder(h) for h in gpu["holders"]) or \
                    "no process visible here (another PID namespace or a stuck context?)"
                text = "GPU %d (%s) still has %.0f MiB used after %.1f s; holders: %s" % (
                    gpu["index"], gpu["uuid"], gpu["after"]["used_mib"], result["elapsed"], who)
                if gpu.get("mps"):
                    text += ("; %.0f MiB of it is the MPS server's own context (pid %s)"
                             % (gpu["mps"]["used_mib"], ", ".join(str(p) for p in gpu["mps"]["server_pids"])))
                problems.append(text + self._reset_note(gpu, result))
        sick = [g for g in (result.get("reset") or {}).get("health", {}).get("gpus", []) if g["verdict"] == _health.FAIL]
        if sick:
            problems.append("GPU health after the reset (power-cycle the host, as nvidia-smi(1) advises): %s" % "; ".join(
                "GPU %d %s" % (g["index"], reason) for g in sick for reason in g["reasons"]))
        if problems:
            raise GpuFleetError("GPUs not released: " + "; ".join(problems), result=result)
        return result

    def _reset_note(self, gpu, result):
        """What the failure of a GPU stuck with no process says about reset_stuck."""
        if gpu["holders"]:
            return ""
        report = result.get("reset")
        if report is None:
            return ("; with no process left, a GPU reset may free it: reset_stuck: true runs nvidia-smi -r "
                    "where that is safe (docs/gpu_release.md)")
        why = [r["reason"] for r in report["refused"] if r["index"] in (gpu["index"], None)]
        why += ["%s: rc %s: %s" % (g["command"], g["rc"], g["output"]) for g in report["groups"]
                if gpu["index"] in g["gpus"] and g["rc"] != 0]
        return "; not reset: %s" % "; ".join(why) if why else ""


class Signalled(NamedTuple):
    """What the signal passes did: every target of them (signalled, or already gone), those
    still alive at the deadline, and the plan of the last pass (its holders are reported)."""

    done: list
    stuck: list
    plan: Plan


class _ScopeState:
    """The selection as asked, its GPU map, and what the first plan found."""

    def __init__(self, indices, minors, before, session):
        self.indices = list(indices)
        self.minors = list(minors)
        self.session = session
        self.first_plan = None
        self.quiet, self.quiet_plan = True, None
        self.added = []
        self.unresolved = []
        self.all_records = None
        if session is not None:
            try:  # every GPU's index, minor and UUID, to place trees by CUDA_VISIBLE_DEVICES
                self.all_records = session.snapshot()
            except NvmlError:
                self.all_records = None  # a lost GPU elsewhere: indices stand for minors
        self.gpu_map = _scope.GpuMap(self.all_records or before, minors=() if before else minors)
        self.skipped_trees = []

    def records_for(self, minors):
        if self.session is None:
            return []
        if self.all_records is not None:
            return [r for r in self.all_records if r["minor"] in minors]
        return self.session.snapshot(self.gpu_map.indices(minors))


def _user_name(uid):
    try:
        return "user %s" % pwd.getpwuid(uid).pw_name
    except KeyError:
        return "uid %d" % uid


def _describe_holder(holder):
    cmdline, state = holder["cmdline"], holder["state"]
    if state == "zombie" or not cmdline:
        # A leader that exited while its threads hold the GPU: name it through a live thread.
        state = group_state(holder["pid"]) or state
        cmdline = cmdline or group_cmdline(holder["pid"]) or "?"
    text = "pid %d (%s, state %s" % (holder["pid"], cmdline[:80], state)
    if holder.get("protected"):
        text += ", protected: " + holder["protected"]
    return text + ")"


def release_gpus(params: dict, check_mode: bool = False) -> dict:
    """The gpu_release module's work: its parameters in, its result out (or a GpuFleetError)."""
    opts = ReleaseOptions(**{k: params[k] for k in ReleaseOptions.FIELDS})
    opts.patterns = regex_list(params["patterns"], "patterns")
    # engine: each named engine's kill set (_gpu/patterns.py ENGINE_PATTERNS) after the given patterns.
    opts.patterns += [p for p in engine_patterns(params.get("engine") or []) if p not in opts.patterns]
    return Releaser(opts, check_mode=check_mode).run()
