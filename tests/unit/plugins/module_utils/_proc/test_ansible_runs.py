# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ansible's own processes, recognised by what they run."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import ansible_runs as ap
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo


def proc(pid, ppid, argv, name=None):
    argv = argv.split(" ") if isinstance(argv, str) else argv
    return ProcInfo(pid, ppid, 1.0, "root", argv, name or (argv[0].rsplit("/", 1)[-1] if argv else ""), "S")


@pytest.mark.parametrize("argv, entry", [
    ("/usr/bin/ansible localhost -m gpufleet.serving.gpu_release -a patterns=sglang::", "ansible"),
    ("/usr/bin/python3 /usr/local/bin/ansible-playbook -e kill_pattern=sglang:: reset.yml", "ansible-playbook"),
    ("/opt/venv/bin/python3.12 -u /opt/venv/bin/ansible-runner run /srv/r", "ansible-runner"),
    ("python3 -m ansible playbook site.yml", "ansible"),
    ("python3 -m sglang.launch_server --tp 8", None),
    ("python3 /opt/ansible-playbook-notes/train.py", None),
    ("sglang::scheduler_TP0", None),
])
def test_entry_point(argv, entry):
    assert ap.entry_point(argv.split(" ")) == entry


@pytest.mark.parametrize("argv, ansible", [
    ("/usr/bin/python3 /root/.ansible/tmp/ansible-tmp-17-42/AnsiballZ_gpu_release.py", True),
    ("/usr/bin/python3 /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_async_wrapper.py 1 60 "
     "/root/.ansible/tmp/ansible-tmp-1/AnsiballZ_gpu_release.py _", True),
    (["/bin/sh", "-c", "/usr/bin/python3 /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_command.py && sleep 0"], True),
    (["ssh: /root/.ansible/cp/4d2a1c [mux]"], True),
    ("ssh -C -o ControlMaster=auto -o ControlPath=/root/.ansible/cp/4d2a host /bin/sh -c python3", True),
    ("ssh gpu-host-7 nvidia-smi", False),
    ("python3 -m sglang.launch_server --model-path /models/ansible-tmp-like", False),
])
def test_is_ansible(argv, ansible):
    argv = argv if isinstance(argv, list) else argv.split(" ")
    assert ap.is_ansible(proc(10, 1, argv)) is ansible


def test_the_session_carrying_a_module_and_nothing_above_it():
    table = {p.pid: p for p in [
        proc(1, 0, "/sbin/init"),
        proc(40, 1, "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups"),
        proc(50, 40, ["sshd: root@notty"]),
        proc(60, 50, ["bash", "-c", "/bin/sh -c '/usr/bin/python3 && sleep 0'"]),
        proc(61, 60, ["/bin/sh", "-c", "/usr/bin/python3 && sleep 0"]),
        proc(62, 61, "/usr/bin/python3"),  # pipelining: the payload comes on stdin
        proc(63, 62, "/usr/bin/python3 /tmp/ansible_gpufleet.serving.gpu_release_payload_x/AnsiballZ_gpu_release.py"),
        proc(70, 1, "tmux new -s ops"),
        proc(71, 70, "-bash"),
        proc(72, 71, "/usr/bin/python3 /usr/bin/ansible-playbook -e kill_pattern=sglang:: reset.yml"),
        proc(73, 72, "ssh -o ControlPath=/tmp/cp/%C gpu1 /bin/sh -c python3"),  # its own ssh client
        proc(80, 1, "python3 -m sglang.launch_server --tp 8"),
    ]}
    found = ap.ansible_pids(table)
    assert {63, 72, 73} <= found
    assert {62, 61, 60, 50} <= found       # the session carrying the module, up to sshd
    assert 71 in found                     # the shell that runs ansible-playbook
    assert not {1, 40, 70, 80} & found     # init, the sshd listener, tmux, the server
