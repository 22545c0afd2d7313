# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Process table: tree relations on hand-built tables, and a snapshot of a real tree."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as pt
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
from tests.support import fake_proc


def table_of(edges):
    """{pid: ppid} -> {pid: ProcInfo}."""
    return {pid: ProcInfo(pid, ppid, 1.0, "u", ["p%d" % pid], "p", "sleeping") for pid, ppid in edges.items()}


#   1 -> 10 -> 11 -> 12
#        10 -> 13
#   1 -> 20 -> 21
#   1 -> 30
TREE = table_of({1: 0, 10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20, 30: 1})


@pytest.mark.parametrize("roots, expected", [
    ([10], {11, 12, 13}),
    ([11], {12}),
    ([12], set()),
    ([10, 20], {11, 12, 13, 21}),
    ([10, 11], {12, 13}),          # a root below another root is not reported as a descendant
    ([1], {10, 11, 12, 13, 20, 21, 30}),
    ([999], set()),                # not in the table
    ([], set()),
])
def test_descendants(roots, expected):
    assert pt.descendants(TREE, roots) == expected


@pytest.mark.parametrize("pid, expected", [
    (12, [11, 10, 1]),
    (21, [20, 1]),
    (1, []),
    (999, []),
])
def test_ancestors(pid, expected):
    assert pt.ancestors(TREE, pid) == expected


def test_ancestors_stop_at_a_parent_missing_from_the_table():
    # nsenter'd processes have a parent outside the namespace (ppid 0 or unknown)
    table = table_of({5: 4, 6: 5})
    assert pt.ancestors(table, 6) == [5, 4]


def test_cycles_terminate():
    table = table_of({5: 6, 6: 5, 7: 6})
    assert pt.descendants(table, [5]) == {6, 7}
    assert pt.ancestors(table, 7) == [6, 5]


def test_children_map():
    assert sorted(pt.children_map(TREE)[10]) == [11, 13]
    assert pt.children_map(TREE)[0] == [1]


@pytest.mark.parametrize("argv, cmdline", [
    (["python3", "-m", "sglang.launch_server", "--tp", "8"], "python3 -m sglang.launch_server --tp 8"),
    (["sglang::scheduler_TP0" + " " * 40], "sglang::scheduler_TP0"),  # setproctitle padding
    ([], ""),
    (None, ""),
])
def test_procinfo_cmdline(argv, cmdline):
    info = ProcInfo(7, 1, 1.0, "root", argv, None, None)
    assert info.cmdline == cmdline
    assert info.as_dict() == {"pid": 7, "user": "root", "cmdline": cmdline, "state": ""}


@pytest.mark.parametrize("pid, ppid, flags, kernel", [
    (2, 0, pt.PF_KTHREAD, True), (3, 2, pt.PF_KTHREAD | 0x40, True),
    (3, 2, 0x400100, False),       # PPID 2 in a PID namespace: the launcher's child, not a kthread
    (2, 1, 0, False),              # PID 2 under tini
    (1, 0, 0x400100, False), (40, 1, 0, False)])
def test_kernel_thread_by_pf_kthread(pid, ppid, flags, kernel):
    assert ProcInfo(pid, ppid, 1.0, "root", [], "k", "S", flags=flags).is_kernel_thread is kernel


def test_kernel_thread_without_flags_is_only_kthreadd():
    assert ProcInfo(2, 0, 1.0, "root", [], "kthreadd", "S").is_kernel_thread
    assert not ProcInfo(3, 2, 1.0, "root", [], "k", "S").is_kernel_thread


def test_snapshot_agrees_with_psutil():
    """The /proc reader gives what psutil gives (Target pins by psutil's create_time)."""
    table = pt.snapshot()
    me = table[os.getpid()]
    proc = pt.psutil.Process(os.getpid())
    assert abs(me.create_time - proc.create_time()) < 0.01
    assert me.argv == proc.cmdline() and me.ppid == proc.ppid()
    assert me.user == proc.username() and me.status == proc.status()
    assert me.sid == os.getsid(0) and me.pgrp == os.getpgrp()
    assert me.exe == os.path.realpath(sys.executable) or me.exe == proc.exe()
    assert not me.is_kernel_thread
    kthreads = [i for i in table.values() if i.is_kernel_thread]
    assert all(not i.argv for i in kthreads)


def test_environ_is_read_lazily(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    me = pt.read_one(os.getpid())
    assert me._environ is pt._UNSET or me.environ is not None
    # /proc/PID/environ is the environment at exec: this process's own start.
    assert isinstance(me.environ, dict)
    assert pt.read_environ(-1) is None


# A real tree: parent -> (mid -> grandchild), leaf. Each blocks on stdin and exits at EOF.
LEAF = "import sys; sys.stdin.read()"
MID = r"""
import subprocess, sys
gc = subprocess.Popen([sys.executable, "-c", %r, "grandchild"], stdin=subprocess.PIPE)
print(gc.pid, flush=True)
sys.stdin.read()
""" % LEAF
PARENT = r"""
import json, subprocess, sys
mid = subprocess.Popen([sys.executable, "-c", %r, "mid"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
leaf = subprocess.Popen([sys.executable, "-c", %r, "leaf"], stdin=subprocess.PIPE)
gc = int(mid.stdout.readline())
print(json.dumps({"mid": mid.pid, "leaf": leaf.pid, "grandchild": gc}), flush=True)
sys.stdin.read()
""" % (MID, LEAF)


@pytest.fixture
def real_tree(own_procs):
    parent = own_procs.python(PARENT, "tree-parent")
    line = parent.stdout.readline()
    assert line, "the tree's parent did not report its children"
    kids = json.loads(line)
    for pid in kids.values():
        own_procs.add(pid)
    return dict(kids, parent=parent.pid)


def test_snapshot_captures_real_tree(real_tree):
    table = pt.snapshot()
    parent = real_tree["parent"]
    assert pt.descendants(table, [parent]) == {real_tree["mid"], real_tree["leaf"], real_tree["grandchild"]}
    assert pt.descendants(table, [real_tree["mid"]]) == {real_tree["grandchild"]}
    assert pt.ancestors(table, real_tree["grandchild"])[:3] == [real_tree["mid"], parent, os.getpid()]
    assert table[parent].argv[:2] == [sys.executable, "-c"] and table[parent].argv[-1] == "tree-parent"
    assert table[real_tree["grandchild"]].argv[-1] == "grandchild"
    assert table[parent].ppid == os.getpid()
    assert table[parent].create_time > 0
    assert pt.self_pid() == os.getpid() and os.getpid() in table


def test_snapshot_sees_our_own_tree_from_protection_view(real_tree):
    # the same relations gpu_release uses for "own tree": everything we started is ours
    table = pt.snapshot()
    ours = pt.descendants(table, [os.getpid()])
    assert {real_tree["parent"], real_tree["mid"], real_tree["leaf"], real_tree["grandchild"]} <= ours


def test_snapshot_reads_stat_and_cmdline_only(tmp_path, monkeypatch):
    """The one pass of a busy host: each process's stat once, its cmdline once (a kernel thread
    has none to read); owner, executable, environment and fds wait until asked for."""
    stat = "%d (%s) S 1 %d %d 0 -1 %d 0 0 0 0 0 0 0 0 20 0 1 0 500 0 0"
    (tmp_path / "10").mkdir()
    (tmp_path / "10" / "stat").write_text(stat % (10, "sleep", 10, 10, 0x400000))
    (tmp_path / "10" / "cmdline").write_bytes(b"sleep\x003600\x00")
    (tmp_path / "11").mkdir()
    (tmp_path / "11" / "stat").write_text(stat % (11, "kworker/0:1", 0, 0, pt.PF_KTHREAD))
    (tmp_path / "self").mkdir()
    opened = []
    real_open = os.open
    monkeypatch.setattr(pt.os, "open", lambda path, *args, **kw: opened.append(path) or real_open(path, *args, **kw))
    table = pt.snapshot(str(tmp_path))
    assert sorted(os.path.relpath(p, str(tmp_path)) for p in opened) == ["10/cmdline", "10/stat", "11/stat"]
    assert table[10].argv == ["sleep", "3600"] and table[10].ppid == 1 and table[10].status == "sleeping"
    assert table[10].create_time == pytest.approx(500.0 / pt.CLOCK_TICKS + pt._boot_time())
    assert table[11].argv == [] and table[11].is_kernel_thread and table[11].name == "kworker/0:1"


# ---- cmdline_snapshot: one file per process, each stat read on lookup ----------------------

def test_cmdline_snapshot_reads_one_file_per_process_and_stat_on_lookup(tmp_path, monkeypatch):
    fake_proc.write(tmp_path, 10, 1, b"sleep\x003600\x00", comm="sleep")
    fake_proc.write(tmp_path, 11, 0, b"", comm="kworker/0:1", flags=pt.PF_KTHREAD)
    fake_proc.write(tmp_path, 12, 10, b"sglang::scheduler_TP0" + b" " * 20)
    (tmp_path / "self").mkdir()
    opened = fake_proc.record_opens(monkeypatch, pt.os, tmp_path)
    table = pt.cmdline_snapshot(str(tmp_path))
    assert sorted(opened) == ["10/cmdline", "11/cmdline", "12/cmdline"]
    # A kernel thread has no command line: a process of the table, nothing to match.
    assert sorted(pt.command_lines(table)) == [(10, "sleep 3600"), (12, "sglang::scheduler_TP0")]
    assert sorted(table) == [10, 11, 12] and len(table) == 3
    del opened[:]
    info = table[12]  # the record: its stat, and its cmdline read again with it
    assert opened == ["12/stat", "12/cmdline"]
    assert info.ppid == 10 and info.cmdline == "sglang::scheduler_TP0" and info.status == "sleeping"
    assert info.create_time == pytest.approx(500.0 / pt.CLOCK_TICKS + table.boot)
    assert table[12] is info and opened == ["12/stat", "12/cmdline"]  # once
    assert pt.ancestors(table, 12) == [10, 1]
    assert opened == ["12/stat", "12/cmdline", "10/stat", "10/cmdline"]  # 1 is not in this table
    assert sorted(p for p, i in table.items()) == [10, 11, 12] and table[11].is_kernel_thread


@pytest.mark.parametrize("data", [
    b"sleep\x003600\x00",
    b"sglang::scheduler_TP0   ",  # setproctitle: one blank-separated title, padded
    b"a\x00\x00",
    b"\x00",  # an argv of one empty string: a command line, empty
    b"x\xff\x00y \x00",  # not UTF-8: decoded as os.fsdecode would
    b"python\x00-c\x00" + b"x" * 9000 + b"\x00",  # longer than one read
])
def test_cmdline_snapshot_gives_the_records_cmdline(tmp_path, data):
    fake_proc.write(tmp_path, 10, 1, data)
    table = pt.cmdline_snapshot(str(tmp_path))
    assert dict(pt.command_lines(table)) == {10: table[10].cmdline}
    assert table[10].argv


def test_cmdline_snapshot_drops_a_pid_taken_by_a_newer_process(tmp_path):
    """A PID whose process started after the pass is not the process the pass read: absent."""
    fake_proc.write(tmp_path, 10, 1, b"sglang::scheduler_TP0")
    fake_proc.write(tmp_path, 11, 1, b"sglang::scheduler_TP1")
    fake_proc.write(tmp_path, 12, 1, b"sleep")
    table = pt.cmdline_snapshot(str(tmp_path))
    now_ticks = int(time.clock_gettime(time.CLOCK_BOOTTIME) * pt.CLOCK_TICKS)
    fake_proc.write(tmp_path, 10, 1, b"sglang::scheduler_TP0", start=now_ticks + 10 * pt.CLOCK_TICKS)
    os.remove(str(tmp_path / "11" / "stat"))  # gone
    assert 10 not in table and 11 not in table and table.get(10) is None
    with pytest.raises(KeyError):
        table[11]  # pylint: disable=pointless-statement
    assert sorted(table) == [12] and len(table) == 1
    assert sorted(table.values(), key=lambda i: i.pid)[0].pid == 12


@pytest.fixture
def fake_tree(tmp_path):
    for pid, ppid in {1: 0, 10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20, 30: 1}.items():
        fake_proc.write(tmp_path, pid, ppid, b"p%d" % pid)
    return pt.cmdline_snapshot(str(tmp_path))


@pytest.mark.parametrize("root", [1, 10, 11, 12, 20, 999])
def test_subtree_is_the_root_and_its_descendants(fake_tree, root):
    expected = (pt.descendants(TREE, [root]) | {root})
    for table in (TREE, fake_tree):
        tree = pt.Subtree(table, root)
        assert {pid for pid in list(TREE) + [999] if pid in tree} == expected
        assert {10, 11, 12, 13, 20, 21, 30, 999} - tree == {10, 11, 12, 13, 20, 21, 30, 999} - expected
        assert tree == expected and len(tree) == len(expected)


def test_subtree_membership_reads_only_the_asked_ancestry(tmp_path, monkeypatch, fake_tree):
    opened = fake_proc.record_opens(monkeypatch, pt.os, tmp_path)
    tree = pt.Subtree(fake_tree, 10)
    assert 12 in tree and 21 not in tree
    assert sorted({p.split("/")[0] for p in opened}) == ["1", "10", "11", "12", "20", "21"]


def test_cmdline_snapshot_of_the_real_tree(real_tree):
    table, full = pt.cmdline_snapshot(), pt.snapshot()
    parent = real_tree["parent"]
    assert pt.descendants(table, [parent]) == pt.descendants(full, [parent]) == {
        real_tree["mid"], real_tree["leaf"], real_tree["grandchild"]}
    assert real_tree["grandchild"] in pt.Subtree(table, os.getpid())
    lines = dict(pt.command_lines(table))
    assert lines[parent] == full[parent].cmdline == table[parent].cmdline
    assert table[os.getpid()].create_time == full[os.getpid()].create_time
