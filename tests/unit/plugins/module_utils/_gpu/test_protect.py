# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Protection: who gpu_release never signals, on hand-built process tables."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import protect
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import PF_KTHREAD, ProcInfo

ANSIBLE = "/usr/bin/python3 /usr/bin/ansible-playbook -i hosts playbooks/swap_to_eagle.yml"
MODULE = "/usr/bin/python3 /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_gpu_release.py"
OWN = 80


def proc(pid, ppid, argv, name=None, user="root", **facts):
    argv = argv.split(" ") if isinstance(argv, str) else argv
    if name is None:
        name = argv[0].rsplit("/", 1)[-1] if argv else ""
    facts.setdefault("uid", 0 if user == "root" else 1000)
    facts.setdefault("exe", "/usr/bin/python3")
    facts.setdefault("flags", 0)
    return ProcInfo(pid, ppid, 1000.0 + pid, user, argv, name, "sleeping", **facts)


def kthread(pid, ppid, name):
    return proc(pid, ppid, [], name=name, flags=PF_KTHREAD, exe=None)


def host_table(*extra):
    """init -> sshd -> bash (pattern in its command line) -> ansible -> module (us) -> NVML helper."""
    rows = [
        proc(1, 0, "/sbin/init splash"),
        kthread(2, 0, "kthreadd"),
        kthread(3, 2, "kworker/0:0H"),
        proc(50, 1, ["sshd: root@pts/0"], name="sshd"),
        proc(60, 50, ["bash", "-c", "ansible-playbook swap.yml  # sglang::"], name="bash"),
        proc(70, 60, ANSIBLE, name="ansible-playboo"),
        proc(OWN, 70, MODULE, name="python3"),
        proc(81, OWN, MODULE, name="python3"),              # forked NVML helper
        proc(82, 81, ["sglang::helper_of_ours"], name="sglang::helper_"),  # anything below us
        proc(90, 70, ANSIBLE, name="ansible-playboo"),      # ansible's fork for another host
        proc(91, 1, ANSIBLE, name="ansible-playboo"),       # a copy elsewhere in the tree
        proc(200, 1, "python3 -m sglang.launch_server --tp-size 8"),
        proc(201, 200, ["sglang::scheduler_TP0"], name="sglang::schedul"),
        proc(300, 1, "python3 monitor.py"),
    ]
    table = {p.pid: p for p in rows}
    for p in extra:
        table[p.pid] = p
    return table


@pytest.mark.parametrize("pid, reason", [
    (OWN, "self"),
    (81, "self"),
    (82, "self"),
    (70, "ancestor"),
    (60, "ancestor"),
    (50, "ancestor"),
    (1, "ancestor"),        # PID 1 is also above us here
    (2, "kernel thread"),
    (3, "kernel thread"),
    (90, "ansible"),            # ansible's fork for another host (also a copy of an ancestor)
    (91, "ansible"),
    (200, None),
    (201, None),
    (300, None),
    (4242, None),           # not in the snapshot
])
def test_reasons_on_a_host_table(pid, reason):
    assert protect.Protection(host_table(), OWN).reason(pid) == reason


def test_pid_1_protected_when_not_our_ancestor():
    # A namespace where we were entered with nsenter: our parent chain ends at 0, not at 1.
    table = {1: proc(1, 0, "tini -s -- sleep infinity"),
             OWN: proc(OWN, 0, MODULE),
             200: proc(200, 1, ["sglang::scheduler_TP0"])}
    prot = protect.Protection(table, OWN)
    assert prot.lineage == {OWN}
    assert prot.reason(1) == "init"
    assert prot.reason(200) is None
    # PID 1 is protected even when the snapshot missed it.
    del table[1]
    assert protect.Protection(table, OWN).reason(1) == "init"


def test_lineage_and_own_tree_sets():
    prot = protect.Protection(host_table(), OWN)
    assert prot.lineage == {OWN, 70, 60, 50, 1}
    assert prot.own_tree == {OWN, 81, 82}
    assert ANSIBLE in prot.lineage_cmdlines and MODULE in prot.lineage_cmdlines


PIPELINED = "/usr/bin/python3"  # the module's whole command line under pipelining


@pytest.mark.parametrize("ppid, uid, reason", [
    (60, 0, "copy of an ancestor"),   # a second module run from the same shell, as root
    (60, 65534, None),                # the same title under the same parent, another user
    (1, 0, None),                     # titled like the module, but not below any ancestor of ours
    (300, 65534, None),               # below a stranger
])
def test_copy_of_an_ancestor_goes_by_parent_and_owner_not_by_title(ppid, uid, reason):
    """A process of `nobody` titled exactly the pipelined module's interpreter path was spared."""
    rows = [proc(1, 0, "/sbin/init"), proc(50, 1, ["sshd: root@notty"], name="sshd"),
            proc(60, 50, ["/bin/sh", "-c", "%s && sleep 0" % PIPELINED], name="sh"),
            proc(OWN, 60, PIPELINED), proc(300, 1, "python3 monitor.py"),
            proc(500, ppid, PIPELINED, uid=uid, user="root" if uid == 0 else "nobody")]
    assert protect.Protection({p.pid: p for p in rows}, OWN).reason(500) == reason


DAEMONS = ["nvidia-persistenced", "nv-hostengine", "dcgm-exporter", "dcgmi", "nvidia-fabricmanager",
           "nv-fabricmanager", "nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "Xorg", "Xwayland",
           "X", "nvidia-device-plugin", "k8s-device-plugin", "gpu-feature-discovery"]


def trusting(info):
    return True


def reason_of(info, exe_trusted=trusting):
    return protect.Protection(host_table(info), OWN, exe_trusted=exe_trusted).reason(info.pid)


@pytest.mark.parametrize("daemon", DAEMONS)
@pytest.mark.parametrize("uid", [0, 121, 999])
def test_gpu_daemon_by_executable_and_system_user(daemon, uid):
    # argv and comm say something else: the executable is what counts
    info = proc(400, 1, ["worker", "--some-flag"], name="worker", exe="/usr/bin/" + daemon, uid=uid)
    assert reason_of(info) == "gpu daemon"


@pytest.mark.parametrize("daemon", DAEMONS)
def test_daemon_title_or_comm_of_another_program_is_not_protected(daemon):
    """`nobody`'s (or root's) python titled like a daemon is no daemon."""
    for uid in (0, 65534, 1000):
        info = proc(400, 1, ["/usr/sbin/%s --user nvidia" % daemon], name=daemon[:15], uid=uid)
        assert reason_of(info) is None
        info = proc(400, 1, [], name=daemon[:15], uid=uid)
        assert reason_of(info) is None


@pytest.mark.parametrize("uid", [65534, 1000, 1234])
def test_daemon_executable_run_by_an_ordinary_user_is_not_protected(uid):
    info = proc(400, 1, ["/usr/bin/nvidia-persistenced"], exe="/usr/bin/nvidia-persistenced", uid=uid)
    assert reason_of(info) is None


def test_daemon_executable_not_root_owned_is_not_protected():
    info = proc(400, 1, ["/tmp/nvidia-persistenced"], exe="/tmp/nvidia-persistenced", uid=0)
    assert reason_of(info, exe_trusted=lambda i: False) is None
    assert reason_of(info) == "gpu daemon"


def test_unreadable_executable_falls_back_to_argv0_of_a_system_user():
    # A non-root caller cannot read a root process's /proc/PID/exe.
    info = proc(400, 1, ["/usr/bin/nv-hostengine", "-n"], exe=None, uid=0)
    assert reason_of(info) == "gpu daemon"
    info = proc(400, 1, ["/usr/bin/nv-hostengine", "-n"], exe=None, uid=65534)
    assert reason_of(info) is None
    info = proc(400, 1, ["sglang::scheduler_TP0"], name="Xorg", exe=None, uid=0)
    assert reason_of(info) is None  # never by comm


def test_deleted_daemon_executable_still_counts():
    info = proc(400, 1, ["x"], exe="/usr/bin/nv-hostengine (deleted)", uid=0)
    assert reason_of(info) == "gpu daemon"


@pytest.mark.parametrize("argv, exe", [
    (["/usr/bin/nvidia-smi", "-l", "1"], "/usr/bin/nvidia-smi"),       # a plain NVML user
    (["python3", "nvidia-persistenced-exporter.py"], "/usr/bin/python3"),
    (["/opt/bin/Xorg-wrapper"], "/opt/bin/Xorg-wrapper"),
    (["sglang::scheduler_TP0"], "/usr/bin/python3"),
])
def test_not_daemons(argv, exe):
    info = proc(400, 1, argv, exe=exe)
    assert reason_of(info) is None


def test_kernel_thread_by_flag_not_by_ppid():
    """In a PID namespace PID 2 is the launcher under tini, not kthreadd."""
    table = {1: proc(1, 0, "tini -s -- bash launch.sh"),
             2: proc(2, 1, "bash launch.sh"),
             3: proc(3, 2, ["sglang::scheduler_TP0"]),
             OWN: proc(OWN, 0, MODULE)}
    prot = protect.Protection(table, OWN)
    assert prot.reason(2) is None and prot.reason(3) is None
    table[4] = kthread(4, 2, "kworker/1:1")
    assert protect.Protection(table, OWN).reason(4) == "kernel thread"


def test_extra_protect_patterns():
    extra = protect.compile_protect([r"keepme", r"^python3 monitor\.py$"])
    prot = protect.Protection(host_table(proc(202, 200, "sglang::scheduler_TP1 keepme")), OWN, extra)
    assert prot.reason(202) == "protect pattern"
    assert prot.reason(300) == "protect pattern"
    assert prot.reason(201) is None
    # the stronger reasons still win
    assert prot.reason(OWN) == "self" and prot.reason(1) == "ancestor"


def test_ancestor_copy_needs_a_command_line():
    # Two processes with empty argv do not "copy" each other (kernel threads aside).
    table = host_table(proc(500, 1, [], name="defunct"))
    table[70] = proc(70, 60, [], name="ansible-playboo")
    assert protect.Protection(table, OWN).reason(500) is None


@pytest.mark.parametrize("raw, words", [
    ("", "empty pattern"),
    ("  ", "empty pattern"),
    (None, "empty pattern"),
    ("(", "not a valid regular expression"),
])
def test_compile_protect_refuses(raw, words):
    with pytest.raises(InvalidInput, match=words):
        protect.compile_protect(["ok", raw])


def test_compile_protect_accepts():
    assert protect.compile_protect(None) == []
    assert [r.pattern for r in protect.compile_protect(["a", r"b\d"])] == ["a", r"b\d"]


@pytest.mark.parametrize("exe, trusted, reason", [
    ("/opt/gpufleet-serving/router/bin/smg", True, "router"),
    ("/opt/gpufleet-serving/router/bin/sglang-router", True, "router"),
    ("/opt/gpufleet-serving/router/bin/smg", False, None),   # a user's own file named smg
    ("/usr/bin/python3", True, None),                        # titled sglang::router, but python
])
def test_the_router_titled_sglang_router_is_protected_by_its_executable(exe, trusted, reason):
    # sglang-router titles itself sglang::router, which SGLang's kill pattern sglang:: matches.
    router = proc(400, 1, ["sglang::router"], name="sglang::router", exe=exe)
    protection = protect.Protection(host_table(router), OWN, exe_trusted=lambda info: trusted)
    assert protection.reason(400) == reason
