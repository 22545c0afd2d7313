# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the collection's real modules through `ansible localhost`."""
import json
import os
import shutil
import subprocess
import tempfile

from tests.support.paths import PYTHON, REPO, VENV_BIN


def ansible_env(extra=None):
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
                "ANSIBLE_PYTHON_INTERPRETER": PYTHON,
                "ANSIBLE_LOCALHOST_WARNING": "False",
                "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
                "ANSIBLE_NOCOLOR": "1"})
    env.update(extra or {})
    return env


def run_module(module, args, env=None, check=False, timeout=180, ns=None):
    """Run gpufleet.serving.MODULE on localhost through `ansible`; return its result dict.

    With `ns` (a pidns.PidNamespace) Ansible and the module run inside it.
    """
    tree = tempfile.mkdtemp(prefix="gf-tree-")
    try:
        cmd = [os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "gpufleet.serving." + module,
               "-a", json.dumps(args), "-t", tree]
        if check:
            cmd.append("--check")
        if ns is not None:
            cmd = ns.cmd(cmd)
        proc = subprocess.run(cmd, cwd=REPO, env=ansible_env(env), capture_output=True,
                              text=True, timeout=timeout, check=False)
        path = os.path.join(tree, "localhost")
        if not os.path.exists(path):
            raise AssertionError("no result from ansible:\n%s\n%s" % (proc.stdout, proc.stderr))
        with open(path) as handle:
            result = json.load(handle)
        result["_rc"] = proc.returncode
        result["_stdout"] = proc.stdout
        return result
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def run_playbook(playbook, extra_vars=None, inventory="localhost,", connection="local", flags=(), timeout=120):
    """`ansible-playbook PLAYBOOK` (on localhost over the local connection unless told otherwise),
    extra vars as JSON; returns the CompletedProcess (text), whatever its return code."""
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory]
    if connection:
        argv += ["-c", connection]
    argv += list(flags)
    if extra_vars is not None:
        argv += ["-e", json.dumps(extra_vars)]
    argv.append(str(playbook))
    return subprocess.run(argv, cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=timeout,
                          check=False)
