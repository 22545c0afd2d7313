# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A FUSE mount that stops answering (tests/support/scripts/fault_fuse.py), inside a test's namespace."""
import os
import subprocess

import pytest

from tests.support.paths import PYTHON, SCRIPTS

HELPER = os.path.join(SCRIPTS, "fault_fuse.py")


def stuck_mount(ns, mnt):
    """Mount the never-answering FUSE file system on `mnt` in `ns`: (its nsenter Popen, the daemon's PID).

    Skips the test where FUSE cannot be mounted. The caller kills the Popen at the end."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("needs /dev/fuse")
    daemon = ns.popen([PYTHON, HELPER, "daemon", str(mnt)], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
    line = daemon.stdout.readline()
    if not line.startswith("mounted"):
        daemon.kill()
        pytest.skip("cannot mount FUSE here: %s" % daemon.stderr.read()[-500:])
    return daemon, int(line.split()[1])


def stuck_holder(ns, env, mnt, mode, root, gpu, mib, title):
    """A stuck mount on `mnt` (made here) and a fault_fuse.py `mode` holder of GPU `gpu` on it.

    Returns (the daemon's nsenter Popen, the daemon's PID, the holder's PID)."""
    mnt.mkdir()
    daemon, daemon_pid = stuck_mount(ns, mnt)
    holder = ns.popen([PYTHON, HELPER, mode, root, str(gpu), str(mib), title, str(mnt)],
                      env=env, stdout=subprocess.PIPE, text=True)
    return daemon, daemon_pid, int(holder.stdout.readline())
