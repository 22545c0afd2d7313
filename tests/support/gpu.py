# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fake-GPU holders (tests/sim's `simctl gpu hold`) started for a test."""
import subprocess

from tests.support.paths import PYTHON, SIMCTL


def hold(root, gpu, mib, title, procs, env, ignore_term=False, exit_delay=None, wrap=(), **kit):
    """Start a detached fake-GPU holder; returns its PID once memory is allocated.

    `procs` is an OwnProcesses, or a PidNamespace to start it in (PID as seen there).
    `kit`: daemon_exe=True, open_only=True, leader_exits=True, device_file=PATH (simctl gpu hold).
    `wrap`: argv put in front (e.g. unshare -m ... for a private mount namespace).
    """
    cmd = list(wrap) + [PYTHON, SIMCTL, "gpu", "hold", root, "--gpu", str(gpu), "--mib", str(mib),
                        "--title", title, "--detach"]
    for key, value in sorted(kit.items()):
        if value is True:
            cmd.append("--" + key.replace("_", "-"))
        elif value:
            cmd += ["--" + key.replace("_", "-"), str(value)]
    if ignore_term:
        cmd.append("--ignore-term")
    if exit_delay is not None:
        cmd += ["--exit-delay", str(exit_delay)]
    if hasattr(procs, "cmd"):
        out = subprocess.run(procs.cmd(cmd), env=env, capture_output=True, text=True, check=True, timeout=30)
        return int(out.stdout.strip().splitlines()[-1])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=30)
    return procs.add(out.stdout.strip().splitlines()[-1])
