# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OwnProcesses: every process a test started, and only those, ended at teardown.

Each process is pinned by a pidfd taken while it was alive (its children included when
the test adopts them with add()), so the clean-up signals exactly that process even if
its PID was reused in between. Nothing is ever killed by name or pattern; tests that
kill by pattern run in a PID namespace of their own (pidns.py).
"""
import os
import signal
import subprocess
import sys
import time


class OwnProcesses:
    """Processes a test started; whatever survives the test is killed by pidfd and reaped.

    stop_all(grace): with grace > 0 every survivor first gets SIGTERM and up to `grace`
    seconds to exit (an `ansible` run that should clean up after itself), then SIGKILL.
    """

    def __init__(self):
        self.popens = []
        self.pidfds = []

    def add(self, pid, popen=None):
        """Pin a process the test started indirectly (a detached holder, a grandchild);
        `popen`: the Popen of a child started elsewhere, to be reaped as well."""
        try:
            self.pidfds.append(os.pidfd_open(int(pid)))
        except ProcessLookupError:
            pass  # already gone: nothing to clean up
        if popen is not None:
            self.popens.append(popen)
        return int(pid)

    def popen(self, argv, **kwargs):
        """subprocess.Popen(argv, **kwargs), owned by the test."""
        proc = subprocess.Popen(argv, **kwargs)
        self.add(proc.pid, proc)
        return proc

    def python(self, code, *args, env=None, stdout=subprocess.PIPE):
        """A `python -c code args...` child with stdin/stdout pipes (text)."""
        return self.popen([sys.executable, "-c", code] + [str(a) for a in args],
                          stdin=subprocess.PIPE, stdout=stdout, text=True, env=env)

    def _signal_all(self, signum):
        for fd in reversed(self.pidfds):
            try:
                signal.pidfd_send_signal(fd, signum)
            except ProcessLookupError:
                pass  # already exited

    def stop_all(self, grace=0.0, reap_timeout=30):
        if grace > 0:
            self._signal_all(signal.SIGTERM)
            deadline = time.monotonic() + grace
            for proc in self.popens:
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        self._signal_all(signal.SIGKILL)
        for fd in self.pidfds:
            os.close(fd)
        self.pidfds = []
        for proc in self.popens:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
            try:
                proc.wait(timeout=reap_timeout)
            except subprocess.TimeoutExpired:
                pass  # stuck in D state (a hung FUSE mount): SIGKILL lands when it wakes
        self.popens = []
