# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ansible's own processes, wherever they run: never a pattern match, never signalled.

The module's ancestors are protected anyway, but Ansible also runs processes
that are not ancestors of the module and whose command lines carry the kill
pattern: the controller reached over SSH on the same host, the controller of a
task run with `async:` (async_wrapper daemonizes the module), and any other
run started at the same time (`ansible ... -a 'patterns=sglang::'`). They are
recognised by what they run, not by a pattern:

- an Ansible entry point: argv[0], or the script an interpreter runs, is
  `ansible`, `ansible-playbook`, `ansible-runner`, ... (`python -m ansible`);
- a module payload or its shell: an argument naming `AnsiballZ_*` or an
  `ansible-tmp-*` directory (async_wrapper runs as `AnsiballZ_async_wrapper.py`
  and its daemonized copies keep that command line);
- Ansible's SSH client and its ControlMaster (`ssh: ~/.ansible/cp/... [mux]`),
  and an ssh/scp/sftp process whose parent is an Ansible process;
- the session that carries a module: the shells and the `sshd:` /
  `sshd-session:` process above an Ansible process, up to the first sshd.
"""

from __future__ import annotations

import os
import re
from typing import Any

ENTRY_POINTS = frozenset(("ansible", "ansible-playbook", "ansible-runner", "ansible-console",
                          "ansible-pull", "ansible-inventory", "ansible-connection", "ansible-doc",
                          "ansible-config", "ansible-vault", "ansible-galaxy", "ansible-test",
                          "ansible-navigator", "ansible-lint"))
MODULES = frozenset(("ansible", "ansible_runner", "ansible_navigator"))  # python -m NAME
PAYLOAD = re.compile(r"AnsiballZ_|ansible-tmp-\d|/\.ansible/tmp/")
SSH_MARKS = ("/.ansible/cp/", "ansible-ssh-")
SSH_CLIENTS = frozenset(("ssh", "scp", "sftp", "sshpass"))
# What may sit between an sshd session and the module: the session itself and shells.
CARRIERS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "su", "sudo", "doas", "runuser",
                      "setpriv", "env", "timeout"))
SSHD_TITLES = ("sshd:", "sshd-session:")


def _base(word):
    return os.path.basename(word.split(" ")[0]) if word else ""


def _is_interpreter(name):
    return name.startswith("python") or name in ("pypy", "pypy3")


def entry_point(argv: list) -> str | None:
    """The Ansible entry point this argv runs, or None."""
    if not argv:
        return None
    first = _base(argv[0])
    if first in ENTRY_POINTS:
        return first
    if _is_interpreter(first):
        args = argv[1:]
        while args and args[0].startswith("-") and args[0] != "-m":
            args = args[1:]  # interpreter options such as -u, -E, -B
        if len(args) >= 2 and args[0] == "-m" and args[1] in MODULES:
            return args[1]
        if args and _base(args[0]) in ENTRY_POINTS:
            return _base(args[0])
    return None


def _payload(argv):
    return any(PAYLOAD.search(arg) for arg in argv)


def _ssh_of_ansible(argv):
    if not argv:
        return False
    title = argv[0]
    if title.startswith("ssh:") and any(mark in title for mark in SSH_MARKS):
        return True  # ControlMaster: "ssh: /root/.ansible/cp/abc [mux]"
    return _base(title) in SSH_CLIENTS and any(mark in arg for arg in argv for mark in SSH_MARKS)


def is_ansible(info: Any) -> bool:
    """True for a process that is Ansible itself (not a child it started)."""
    argv = info.argv
    return bool(entry_point(argv) or _payload(argv) or _ssh_of_ansible(argv))


def _carrier(info):
    """A shell, or a bare interpreter reading the module from stdin (pipelining)."""
    name = _base(info.argv[0] if info.argv else info.name).lstrip("-")  # "-bash": a login shell
    return name in CARRIERS or (_is_interpreter(name) and len(info.argv) == 1)


def _is_sshd_session(info):
    return bool(info.argv) and info.argv[0].startswith(SSHD_TITLES)


def ansible_pids(table: dict) -> set:
    """PIDs of Ansible's processes in `table`, with the session processes carrying them."""
    found = {pid for pid, info in table.items() if info.argv and is_ansible(info)}
    for pid, info in table.items():  # ssh clients started by Ansible
        if pid not in found and info.ppid in found and _base(info.argv[0] if info.argv else "") in SSH_CLIENTS:
            found.add(pid)
    carriers = set()
    for pid in found:
        info = table.get(table[pid].ppid)
        seen = set()
        while info is not None and info.pid not in found and info.pid not in seen and info.pid != 1:
            seen.add(info.pid)
            if _is_sshd_session(info):
                carriers.add(info.pid)
                break
            if not _carrier(info):
                break
            carriers.add(info.pid)
            info = table.get(info.ppid)
    return found | carriers
