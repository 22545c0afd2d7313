#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_release against the seeds' one-liners, freeing an 8-worker server on fake GPUs.

Each run gets a fresh private PID namespace (tests/support/pidns.py: unshare
--pid --fork --mount-proc, tini as PID 1) holding:
  - a server-like tree (tests/support/scripts/server_tree.py): a parent titled
    `python3 -m sglang.launch_server ...` with 8 children `sglang::scheduler_TP0..7`,
    each holding --mib MiB on its own fake GPU;
  - a bystander `python3 monitor.py` that holds no GPU.
Every variant, the broad `python3` kill and `pkill -f` included, runs inside that
namespace, so none can reach this machine's other processes. Variants:
  module      `ansible localhost -m gpufleet.serving.gpu_release` (wall time of the command)
  in-process  module_utils Releaser.run() in a Python process in the namespace
              (time of run() alone: the module without Ansible and interpreter start-up)
  seed1       ps|grep sglang.launch_server kill -9; sleep 2; ps|grep -E "python3|sglang"
              |xargs kill -9; sleep 3; kill -9 $(fuser DEV/nvidia*); sleep 2; status of all GPUs
  seed2       pkill -9 -f sglang; sleep 8; status | head -2
The seeds run from a script file; `nvidia-smi --query-gpu` is `simctl gpu status`
and /dev/nvidia* is the fake devices dir. A poller outside reads the fake GPUs every
0.1 s throughout (as a monitoring agent would), so the fake driver frees memory on
its own 0.12 s clock whoever reads it next.

After every run the bench checks for itself: server tree gone, all 8 GPUs at 0 MiB
(polled up to 2 s), bystander alive. It also records what the variant's own check
covered. Once, it also runs seed 2 as typed (`ssh host '...'` gives `bash -c '...'`)
to see whether the shell survives its own `pkill -f sglang`.
Prints medians and figures; asserts nothing about time.

    .venv/bin/python bench/release_vs_oneliner.py [--runs 5] [--mib 20000] [--stray]

--stray adds a 9th child with an unrelated title (`python3 /opt/helpers/prefetch_worker.py`)
holding GPU 7, the kind of helper the tree kill catches and a pattern kill misses.
Needs root, unshare, nsenter, tini, fuser and procps (ps, pkill).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # a program: tests.support, then what the tests see (tests/support/syspath.py)
from tests.support import syspath  # noqa: E402  pylint: disable=wrong-import-position

syspath.install()

from simlib import fakegpu  # noqa: E402

from tests.support import pidns  # noqa: E402
from tests.support.ansible import ansible_env, run_module  # noqa: E402
from tests.support.paths import PYTHON, SCRIPTS, SIMCTL  # noqa: E402

SERVER_TITLE = "python3 -m sglang.launch_server --model-path /models/kimi-k2.5 --tp-size 8 --port 30000"
PATTERN = r"sglang::|sglang\.launch_server"
GPUS = 8
GUARD = '[ "$(cat /proc/1/comm)" = tini ] || { echo "not in a private PID namespace" >&2; exit 99; }\n'

# Seed 1 as typed (one line in the write-up), step by step.
SEED1 = GUARD + "; ".join([
    r"""PID=$(ps aux | grep "sglang.launch_server" | grep -v grep | awk '{print $2}' | head -1)""",
    r"""kill -9 $PID 2>/dev/null""",
    r"""sleep 2""",
    r"""ps aux | grep -E "python3|sglang" | grep -v grep | awk '{print $2}' | xargs kill -9 2>/dev/null""",
    r"""sleep 3""",
    r"""kill -9 $(fuser {dev}/nvidia* 2>/dev/null | tr " " "\n" | sort -u | grep -v "^$") 2>/dev/null""",
    r"""sleep 2""",
    r"""{status}""",
]) + "\n"
SEED2 = GUARD + r"""pkill -9 -f "sglang" 2>/dev/null; sleep 8; {status} | head -2
"""
# `nvidia-smi --query-gpu=index,memory.used --format=csv,noheader` on the fake GPUs
STATUS = ("%s %s gpu status {root} | %s -c 'import json,sys; "
          "[print(\"%%d, %%d MiB\" %% (g[\"index\"], g[\"used_mib\"])) for g in json.load(sys.stdin)]'"
          % (PYTHON, SIMCTL, PYTHON))

IN_PROCESS = r"""
import json, sys, time
sys.path.insert(0, %r)
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.release import Releaser, ReleaseOptions
opts = ReleaseOptions(patterns=[%r], gpus="all", sweep=True, protect=[], term_timeout=10.0, timeout=60.0,
                      max_used_mib=0.0, devices=None, verify=True, force_broad=False, sweep_users=[],
                      nvml_timeout=20.0, v1_reserve_mib=1024.0)
t0 = time.monotonic()
res = Releaser(opts).run()
took = time.monotonic() - t0
print(json.dumps({"took": took, "killed": len(res["killed"]), "free": [g.get("free") for g in res["gpus"]]}))
""" % (os.path.join(REPO, "build", "collections"), PATTERN)

MONITOR = "import signal\nwhile True:\n    signal.pause()\n"


class Poller:
    """Reads the fake GPUs every 0.1 s, as dcgm-exporter or a watch loop would."""

    def __init__(self, root):
        self.root, self.stop_evt = root, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop_evt.wait(0.1):
            try:
                fakegpu.read_status(self.root)
            except OSError:
                pass

    def stop(self):
        self.stop_evt.set()
        self.thread.join()


class Host:
    """One private namespace with the server tree and a bystander on fake GPUs."""

    def __init__(self, root, env, workdir, mib, stray, with_server=True):
        self.root, self.env = root, env
        self.ns = pidns.PidNamespace()
        self.tree = None
        self.popens = []
        try:
            self.bystander = self._start_bystander(workdir)
            if with_server:
                specs = ["%d,%d,sglang::scheduler_TP%d" % (i, mib, i) for i in range(GPUS)]
                if stray:
                    specs.append("7,1000,python3 /opt/helpers/prefetch_worker.py")
                proc = self.ns.popen([PYTHON, os.path.join(SCRIPTS, "server_tree.py"), root, SERVER_TITLE] + specs,
                                     env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
                self.popens.append(proc)
                line = proc.stdout.readline()
                proc.stdout.close()
                if not line:
                    raise RuntimeError("server tree did not start")
                self.tree = json.loads(line)
        except BaseException:
            self.stop()
            raise

    def _start_bystander(self, workdir):
        # `ps` shows "python3 monitor.py" (pyenv's shim may put the full path first); no GPU
        self.popens.append(self.ns.popen(["bash", "-c", 'cd "$1" && exec python3 monitor.py', "-", workdir], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        pid = wait_for(lambda: self._find("python3 monitor.py"), 10)
        if not pid:
            raise RuntimeError("bystander did not start")
        return pid

    def _find(self, cmdline):
        base = "/proc/%d/root/proc" % self.ns.init_pid
        for entry in os.listdir(base):
            if entry.isdigit():
                try:
                    with open("%s/%s/cmdline" % (base, entry), "rb") as handle:
                        line = handle.read().replace(b"\0", b" ").strip()
                        if line == cmdline.encode() or line.endswith(b"/" + cmdline.encode()):
                            return int(entry)
                except OSError:
                    pass
        return None

    def tree_pids(self):
        return [self.tree["parent"]] + list(self.tree["workers"].values()) if self.tree else []

    def stop(self):
        self.ns.stop()  # SIGKILL to the namespace's PID 1 ends everything in it
        for proc in self.popens:  # the nsenter processes outside
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.01)


def all_free(root, timeout=2.0):
    return bool(wait_for(lambda: all(g["used_mib"] == 0 for g in fakegpu.read_status(root)), timeout))


def run_script(host, text, as_bash_c=False):
    """Run a one-liner inside the namespace; returns (wall seconds, rc, stdout)."""
    if as_bash_c:
        argv = ["bash", "-c", text]
    else:
        fd, path = tempfile.mkstemp(suffix=".sh", prefix="oneliner-")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        argv = ["bash", path]
    t0 = time.monotonic()
    out = host.ns.run(argv, env=host.env, capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - t0
    if not as_bash_c:
        os.unlink(path)
    if out.returncode == 99:
        raise RuntimeError(out.stderr)
    return wall, out.returncode, out.stdout


def own_check(stdout):
    """(GPUs the one-liner's check printed, how many of those showed 0 MiB)."""
    lines = [ln for ln in stdout.splitlines() if ln.strip().endswith("MiB")]
    return len(lines), sum(1 for ln in lines if ln.split(",")[1].strip() == "0 MiB")


def variant_module(host):
    t0 = time.monotonic()
    res = run_module("gpu_release", {"patterns": [PATTERN], "term_timeout": 10}, env=host.env, ns=host.ns)
    wall = time.monotonic() - t0
    checked = len(res.get("gpus") or [])
    return wall, {"rc": res["_rc"], "checked": checked,
                  "check_ok": res["_rc"] == 0 and all(g.get("free") for g in res.get("gpus") or [])}


def variant_in_process(host):
    out = host.ns.run([PYTHON, "-c", IN_PROCESS], env=host.env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return float("nan"), {"rc": out.returncode, "checked": 0, "check_ok": False, "err": out.stderr[-300:]}
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    return rec["took"], {"rc": 0, "checked": len(rec["free"]), "check_ok": all(rec["free"])}


def variant_seed(template):
    def run(host):
        text = template.replace("{dev}", os.path.join(host.root, "dev")).replace(
            "{status}", STATUS.replace("{root}", host.root))
        wall, rc, stdout = run_script(host, text)
        checked, zero = own_check(stdout)
        return wall, {"rc": rc, "checked": checked, "check_ok": checked > 0 and zero == checked}
    return run


VARIANTS = [("gpu_release (ansible)", variant_module),
            ("gpu_release (in-process)", variant_in_process),
            ("seed 1 one-liner", variant_seed(SEED1)),
            ("seed 2 one-liner", variant_seed(SEED2))]


def one_run(name, fn, root, env, workdir, args):
    host = Host(root, env, workdir, args.mib, args.stray)
    try:
        wall, own = fn(host)
        gone = not any(host.ns.alive(p) for p in host.tree_pids())
        free = all_free(root)
        bystander = host.ns.alive(host.bystander)
    finally:
        host.stop()
    # whatever a variant left holding memory died with the namespace; let the fake driver settle
    all_free(root, 5.0)
    return {"wall": wall, "own": own, "tree_gone": gone, "all_free": free, "bystander_alive": bystander}


def noop_runs(root, env, workdir, args):
    module, inproc = [], []
    for unused in range(args.runs):
        host = Host(root, env, workdir, args.mib, False, with_server=False)
        try:
            wall, own = variant_module(host)
            took, own2 = variant_in_process(host)
            assert own["rc"] == 0 and own2["rc"] == 0, (own, own2)
            module.append(wall)
            inproc.append(took)
        finally:
            host.stop()
    return module, inproc


def seed2_as_typed(root, env, workdir, args):
    host = Host(root, env, workdir, args.mib, args.stray)
    try:
        text = SEED2.replace("{status}", STATUS.replace("{root}", root))
        wall, rc, stdout = run_script(host, text, as_bash_c=True)
        checked, unused = own_check(stdout)
        return {"rc": rc, "check_printed": checked, "wall": wall}
    finally:
        host.stop()
        all_free(root, 5.0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=int, default=20000)
    parser.add_argument("--stray", action="store_true", help="add a non-sglang child holding GPU 7")
    args = parser.parse_args(argv)
    if not pidns.available() or not all(shutil.which(t) for t in ("fuser", "ps", "pkill")):
        sys.exit("needs root, unshare, nsenter, tini, fuser, ps and pkill")

    work = tempfile.mkdtemp(prefix="gf-bench-release-")
    root = fakegpu.init(os.path.join(work, "gpu"), gpus=GPUS)
    env = ansible_env(fakegpu.env(root))
    with open(os.path.join(work, "monitor.py"), "w") as handle:
        handle.write(MONITOR)
    poller = Poller(root)
    results = {name: [] for name, unused in VARIANTS}
    try:
        for i in range(args.runs):
            for name, fn in VARIANTS:  # interleaved, so drift hits every variant alike
                results[name].append(one_run(name, fn, root, env, work, args))
            print("run %d/%d done" % (i + 1, args.runs), file=sys.stderr, flush=True)
        noop_module, noop_inproc = noop_runs(root, env, work, args)
        typed = seed2_as_typed(root, env, work, args)
    finally:
        poller.stop()
        shutil.rmtree(work, ignore_errors=True)

    print("Release of an 8-worker server tree (%d MiB per GPU%s), %d runs each, private PID namespaces"
          % (args.mib, ", plus a non-sglang child on GPU 7" if args.stray else "", args.runs))
    print("%-26s %9s %9s  %-9s %-13s %-10s %-17s" % ("variant", "median s", "min s", "tree gone",
                                                     "all 8 GPUs 0", "bystander", "own check covers"))
    med = {}
    for name, unused in VARIANTS:
        runs = results[name]
        walls = [r["wall"] for r in runs]
        med[name] = statistics.median(walls)

        def frac(key):
            return "%d/%d" % (sum(1 for r in runs if r[key]), len(runs))  # noqa: B023 (called in this iteration)
        checked = sorted({r["own"]["checked"] for r in runs})
        print("%-26s %9.3f %9.3f  %-9s %-13s %-10s %s GPU(s), passed %d/%d"
              % (name, med[name], min(walls), frac("tree_gone"), frac("all_free"),
                 "alive " + frac("bystander_alive"), "/".join(str(c) for c in checked),
                 sum(1 for r in runs if r["own"]["check_ok"]), len(runs)))
    a, s1, s2 = med["gpu_release (ansible)"], med["seed 1 one-liner"], med["seed 2 one-liner"]
    ip = med["gpu_release (in-process)"]
    print("ratio gpu_release(ansible)/seed1 = %.3f   gpu_release(ansible)/seed2 = %.3f" % (a / s1, a / s2))
    print("ratio gpu_release(in-process)/seed1 = %.3f   in-process/seed2 = %.3f" % (ip / s1, ip / s2))
    print("Ansible's own overhead, interpreter start-up included (median ansible - median in-process) = %.3f s"
          % (a - ip))
    print("no-op gpu_release on a clean host: ansible median %.3f s, in-process median %.3f s"
          % (statistics.median(noop_module), statistics.median(noop_inproc)))
    print("seed 2 as typed over ssh (bash -c '...'): rc %s%s, GPU lines printed by its check: %d, %.2f s"
          % (typed["rc"], " (its own shell matched `pkill -f sglang`)" if typed["rc"] in (-9, 137) else "",
             typed["check_printed"], typed["wall"]))


if __name__ == "__main__":
    main()
