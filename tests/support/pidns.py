# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A private PID + mount namespace for tests that kill by pattern.

gpu_release kills by command-line pattern; run on the machine's own process
table, a test would also hit any real `sglang::` process of someone else.
So each such test gets a namespace of its own (tini as PID 1 reaps orphans),
starts its processes and runs Ansible inside it with nsenter, and ends it by
SIGKILLing that PID 1, which takes everything inside along.

An nsenter that popen() started stays outside the namespace as the parent of what it runs
there, and stops itself whenever that child stops (util-linux's nsenter does, to pass job
control on): a test that stops the child leaves nsenter stopped, never reaping its child, and
the namespace's tini cannot finish exiting until that child is reaped. stop() therefore
continues and reaps every nsenter it started. Each namespace is registered with
tests/support/leftovers.py, which fails the session on any process left in it.
"""
import os
import shutil
import signal
import subprocess

from tests.support import leftovers, procfs
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
        self._popens = []  # the nsenter processes popen() started, continued and reaped by stop()
        leftovers.register_namespace(self.init_pid)

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
        proc = subprocess.Popen(self.cmd(argv), **kwargs)
        self._popens.append(proc)
        return proc

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
        for proc in self._popens:
            _end(proc)
        try:
            self._unshare.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._unshare.kill()
            self._unshare.wait(timeout=5)


def _end(proc):
    """Continue, then reap, an nsenter popen() started: its child in the namespace died with
    the namespace's PID 1, so a running nsenter reaps it and exits at once; SIGKILL if not."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGCONT)  # not yet reaped: the PID is still this child's
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
