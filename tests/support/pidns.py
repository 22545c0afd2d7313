# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A private PID + mount namespace for tests that kill by pattern.

gpu_release kills by command-line pattern; run on the machine's own process
table, a test would also hit any real `sglang::` process of someone else.
So each such test gets a namespace of its own (tini as PID 1 reaps orphans),
starts its processes and runs Ansible inside it with nsenter, and ends it by
SIGKILLing that PID 1, which takes everything inside along.
"""
import os
import shutil
import signal
import subprocess

from tests.support import procfs
from tests.support.polling import poll


def available():
    return os.geteuid() == 0 and all(shutil.which(t) for t in ("unshare", "nsenter", "tini"))


class PidNamespace:
    def __init__(self, child=("sleep", "infinity"), env=None):
        """`child`: what tini starts as PID 2 (a launcher, for tests that need one)."""
        self._unshare = subprocess.Popen(
            ["unshare", "--pid", "--mount", "--fork", "--mount-proc", "--propagation", "private",
             "--kill-child", "tini", "-s", "--"] + list(child),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            self.init_pid = poll(self._find_init, 10, 0.01, "the PID namespace to start")
        except AssertionError as exc:
            raise RuntimeError("PID namespace did not start") from exc
        self.proc = "/proc/%d/root/proc" % self.init_pid  # the namespace's /proc, seen from here

    def _find_init(self):
        path = "/proc/%d/task/%d/children" % (self._unshare.pid, self._unshare.pid)
        try:
            with open(path) as handle:
                kids = handle.read().split()
        except OSError:
            kids = []
        return int(kids[0]) if kids and self._ns_ready(int(kids[0])) else None

    @staticmethod
    def _ns_ready(pid):
        try:
            with open("/proc/%d/comm" % pid) as handle:
                comm = handle.read().strip()
            return os.path.exists("/proc/%d/root/proc/1/stat" % pid) and comm == "tini"
        except OSError:
            return False

    def cmd(self, argv):
        """argv wrapped to run inside the namespace."""
        return ["nsenter", "-t", str(self.init_pid), "-p", "-m", "--"] + list(argv)

    def run(self, argv, **kwargs):
        check = kwargs.pop("check", False)
        return subprocess.run(self.cmd(argv), check=check, **kwargs)

    def popen(self, argv, **kwargs):
        return subprocess.Popen(self.cmd(argv), **kwargs)

    def state(self, pid):
        """The process state letter of namespace PID `pid`, or None when it is gone."""
        return procfs.state(pid, self.proc)

    def alive(self, pid):
        return procfs.alive(pid, self.proc)

    def stop(self):
        try:
            os.kill(self.init_pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self._unshare.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._unshare.kill()
            self._unshare.wait(timeout=5)
