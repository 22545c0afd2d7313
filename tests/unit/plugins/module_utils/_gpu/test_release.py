# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release's own decisions (_gpu/release.py): a refused signal names become, an engine adds
its kill set to the patterns, an unknown engine is refused before anything runs."""

from __future__ import annotations

import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import release
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import ENGINE_PATTERNS
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
from tests.support import fake_proc


def test_eperm_message_for_a_non_root_user_says_become(monkeypatch):
    from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import release as _release

    class Denied:  # the parts of a _signals.Target that _fail_if_denied reads
        pid, denied, signals, info = 4242, True, [], ProcInfo(4242, 1, 0.0, "root", ["sglang::x"], "x", "sleeping")

        def result(self):
            return {"pid": self.pid, "cmdline": "sglang::x", "user": "root", "error": "not permitted to signal: EPERM"}

        def state(self):
            return "sleeping"

        def close(self):
            pass

    releaser = _release.Releaser.__new__(_release.Releaser)
    releaser.start = time.monotonic()
    monkeypatch.setattr(_release.os, "geteuid", lambda: 65534)
    with pytest.raises(GpuFleetError) as err:
        releaser._fail_if_denied([Denied()], {})  # pylint: disable=protected-access
    assert err.value.msg == ("not permitted to signal: pid 4242 (sglang::x) of user root; this module runs as "
                             "user nobody: run the task with become: true (or as the owner of these processes)")


def _release_params(**given):
    params = {k: None for k in release.ReleaseOptions.FIELDS}
    params.update(patterns=[], engine=None, sweep=True)
    params.update(given)
    return params


@pytest.mark.parametrize("engine, patterns, expected", [
    (None, [], []),  # unset: no pattern at all
    ([], ["sglang::"], ["sglang::"]),
    (["vllm"], [], ENGINE_PATTERNS["vllm"]),
    (["vllm"], ["my_job"], ["my_job"] + ENGINE_PATTERNS["vllm"]),
    (["any"], [r"VLLM::"], [r"VLLM::"] + [p for pats in ENGINE_PATTERNS.values() for p in pats if p != r"VLLM::"]),
    (["sglang", "vllm"], [], ENGINE_PATTERNS["sglang"] + ENGINE_PATTERNS["vllm"]),
])
def test_engine_adds_its_kill_set_to_patterns(monkeypatch, engine, patterns, expected):
    seen = {}

    class Recorder:
        def __init__(self, opts, check_mode=False):
            seen["patterns"] = opts.patterns

        def run(self):
            return {"changed": False}

    monkeypatch.setattr(release, "Releaser", Recorder)
    release.release_gpus(_release_params(engine=engine, patterns=patterns))
    assert seen["patterns"] == expected


def test_unknown_engine_refused_before_anything_runs(monkeypatch):
    monkeypatch.setattr(release, "Releaser", None)  # would fail loudly if reached
    with pytest.raises(InvalidInput, match="unknown engine 'trt'"):
        release.release_gpus(_release_params(engine=["trt"]))


def _gpu_record(used_mib, processes=()):
    return {"index": 0, "uuid": "GPU-0", "name": "fake", "minor": 0, "memory_api": "v2", "total": 80 << 30,
            "used": int(used_mib) << 20, "reserved": 0, "processes": list(processes)}


@pytest.mark.parametrize("quiet, before_mib, after_mib, scans", [
    (True, 0, 0, 0),  # the no-op of idle GPUs: no look at every process's fds
    (True, 500, 0, 1),  # memory was in use: who has the device open is named
    (True, 0, 500, 1),
    (False, 0, 0, 1),  # something was signalled in this run
])
def test_report_scans_every_fd_only_when_something_held_or_happened(quiet, before_mib, after_mib, scans):
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.holders import DeviceHolders

    calls = []

    class Holdings:
        def full(self, thorough=True):
            calls.append(thorough)
            found = DeviceHolders()
            found.opened[77] = {0}  # an NVML monitor: the device open, no memory
            return found

    class Plan:  # the parts of a Plan that _gpu_report reads
        holdings = Holdings()
        table = {77: ProcInfo(77, 1, 0.0, "root", ["exporter"], "exporter", "sleeping")}
        protection = type("P", (), {"own_tree": set(), "reason": staticmethod(lambda pid: None)})()

    releaser = release.Releaser.__new__(release.Releaser)
    releaser.opts = release.ReleaseOptions(v1_reserve_mib=0.0, max_used_mib=0.0, mps="overhead")
    releaser.mps_servers = release._mps.ListedServers()  # pylint: disable=protected-access
    releaser.scope = type("S", (), {"quiet": quiet, "unresolved": []})()
    gpus = releaser._gpu_report([_gpu_record(before_mib)], [_gpu_record(after_mib)], Plan())  # pylint: disable=protected-access
    assert calls == [False] * scans
    assert [h["pid"] for h in gpus[0]["holders"]] == [77] * scans


class _NoHoldings:  # the parts of a _scope.Holdings that Plan reads: nothing holds a GPU
    gpu_map = None

    def held(self, pid):
        return set()

    def holders_of(self, minors, scan_all):
        return set()


def _plan_on(root, own_pid=999):
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import compile_patterns
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.protect import Protection
    from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable
    table = _proctable.cmdline_snapshot(str(root))
    yield table
    opts = release.ReleaseOptions(sweep=True, sweep_users=[])
    yield release.Plan(table, Protection(table, own_pid, exe_trusted=lambda info: False),
                       compile_patterns(["sglang::"], False), [0], opts, _NoHoldings())


def test_noop_plan_reads_only_command_lines(tmp_path, monkeypatch):
    """Nothing matches: no process's stat is read, whatever the host runs."""
    from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable
    for pid in range(10, 60):
        fake_proc.write(tmp_path, pid, 1, b"sleep\x003600\x00")
    opened = fake_proc.record_opens(monkeypatch, _proctable.os, tmp_path)
    steps = _plan_on(tmp_path)
    next(steps)
    plan = next(steps)
    assert not plan.pattern and not plan.sweep
    assert sorted(opened) == sorted("%d/cmdline" % pid for pid in range(10, 60))


def test_plan_matches_the_record_looked_up_not_the_pass(tmp_path):
    """A match of the pass whose process exec'd (or whose PID was taken) before its record was
    read is judged by the record: the process that would be signalled."""
    fake_proc.write(tmp_path, 1, 0, b"init")
    fake_proc.write(tmp_path, 10, 1, b"sglang::scheduler_TP0")
    fake_proc.write(tmp_path, 11, 10, b"worker", session=10)  # a descendant of a match
    fake_proc.write(tmp_path, 20, 1, b"sglang::scheduler_TP1")
    fake_proc.write(tmp_path, 30, 1, b"sleep")
    steps = _plan_on(tmp_path)
    next(steps)
    fake_proc.write(tmp_path, 20, 1, b"bash")  # exec'd after the pass
    plan = next(steps)
    assert plan.pattern == {10: "pattern", 11: "descendant"}
