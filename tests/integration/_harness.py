"""Shared helpers for integration tests: run real modules, own test processes."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
PYTHON = os.path.join(VENV_BIN, "python")
SIMCTL = os.path.join(REPO, "tests", "sim", "simctl")
sys.path.insert(0, os.path.join(REPO, "tests", "sim"))

# fakegpu is re-exported to the tests (tests/sim is put on the path above).
from _polling import poll  # noqa: E402  (tests/ is on sys.path via tests/conftest.py)
from simlib import fakegpu  # noqa: E402,F401  pylint: disable=unused-import


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

    With `ns` (a _pidns.PidNamespace) Ansible and the module run inside it.
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


def wait_for(predicate, timeout=20.0, interval=0.02, what="condition"):
    return poll(predicate, timeout, interval, what)


def alive(pid):
    """True while PID runs and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class OwnProcesses:
    """Processes a test started; whatever survives the test is SIGKILLed by PID."""

    def __init__(self):
        self.pids = []
        self.popens = []

    def add(self, pid):
        self.pids.append(int(pid))
        return int(pid)

    def popen(self, *args, **kwargs):
        proc = subprocess.Popen(*args, **kwargs)
        self.popens.append(proc)
        self.pids.append(proc.pid)
        return proc

    def stop_all(self):
        for pid in self.pids:
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for proc in self.popens:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


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


def timed(func, *args, **kwargs):
    """func(*args, **kwargs) and the seconds it took."""
    t0 = time.monotonic()
    res = func(*args, **kwargs)
    return res, time.monotonic() - t0
