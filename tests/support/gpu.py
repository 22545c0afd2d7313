# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fake-GPU holders (sim/'s `simctl gpu hold`) started for a test."""
import subprocess

from tests.support.paths import PYTHON, SIMCTL


def hold(root, gpu, mib, title, procs, env, ignore_term=False, exit_delay=None, wrap=(), extra=(), **kit):
    """Start a detached fake-GPU holder; returns its PID once memory is allocated.

    `gpu`: an index or a list of them. `title`: the holder's process title (None: simctl's own).
    `procs` is an OwnProcesses, or a PidNamespace to start it in (PID as seen there).
    `env`: the environment (None: this one). `kit`: daemon_exe=True, open_only=True,
    leader_exits=True, device_file=PATH (simctl gpu hold). `wrap`: argv put in front (e.g.
    unshare -m ... for a private mount namespace). `extra`: more simctl gpu hold arguments.
    """
    gpus = ",".join(str(g) for g in gpu) if isinstance(gpu, (list, tuple)) else str(gpu)
    cmd = list(wrap) + [PYTHON, SIMCTL, "gpu", "hold", root, "--gpu", gpus, "--mib", str(mib)]
    if title is not None:
        cmd += ["--title", title]
    cmd.append("--detach")
    for key, value in sorted(kit.items()):
        if value is True:
            cmd.append("--" + key.replace("_", "-"))
        elif value:
            cmd += ["--" + key.replace("_", "-"), str(value)]
    if ignore_term:
        cmd.append("--ignore-term")
    if exit_delay is not None:
        cmd += ["--exit-delay", str(exit_delay)]
    cmd += list(extra)
    if hasattr(procs, "cmd"):
        cmd = procs.cmd(cmd)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, "simctl gpu hold: rc %d\n%s" % (out.returncode, out.stderr)
    pid = int(out.stdout.strip().splitlines()[-1])
    return pid if hasattr(procs, "cmd") else procs.add(pid)
