# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared fixtures for unit tests that start real processes.

`own_procs` starts Python children and adopts their descendants by PID; at the
end of the test every one of them that still runs is SIGKILLed through a pidfd
taken while it was alive (so a PID reused in between is never hit), and every
direct child is reaped. Nothing is ever killed by name or pattern.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

# Imported for its effect: it puts the collection and tests/sim on sys.path.
import _unit_support  # noqa: F401  pylint: disable=unused-import
import pytest


class OwnProcesses:
    def __init__(self):
        self.popens = []
        self.pidfds = []

    def start(self, code, *args, env=None, stdout=subprocess.PIPE):
        """A `python -c code args...` child with stdin/stdout pipes (text)."""
        proc = subprocess.Popen([sys.executable, "-c", code] + [str(a) for a in args],
                                stdin=subprocess.PIPE, stdout=stdout, text=True, env=env)
        self.popens.append(proc)
        self.adopt(proc.pid)
        return proc

    def adopt(self, pid):
        """Pin a process we started indirectly (a grandchild) for the clean-up."""
        try:
            self.pidfds.append(os.pidfd_open(int(pid)))
        except ProcessLookupError:
            pass
        return int(pid)

    def stop_all(self):
        for fd in reversed(self.pidfds):
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except ProcessLookupError:
                pass  # already exited
            os.close(fd)
        self.pidfds = []
        for proc in self.popens:
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
            proc.wait(timeout=10)


@pytest.fixture
def own_procs():
    own = OwnProcesses()
    yield own
    own.stop_all()
