#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_release's no-op on a busy host: N idle processes, nothing to release (issue 11 item 12, issue 35 item 6).

In a private PID namespace (tests/support/pidns.py) on a fake 8-GPU host, this starts
N idle processes (`sleep`, or with --kind python idle Python interpreters, whose maps and
fd tables are larger), then, alternately for --runs rounds:

  new        Releaser.run() of plugins/module_utils (patterns sglang, all GPUs, nothing matches,
             every GPU free): the module's own `elapsed`, without Ansible and interpreter start;
  stat       one pass over /proc reading each process's /proc/PID/stat once;
  cmdline    the floor of a pattern match: each process's /proc/PID/cmdline read once (what
             the module's no-op reads of every process);
  stat+cmd   each process's stat and cmdline read once (a full snapshot's reads);
  old        the /proc work the release of commit 714fba8 did for the same no-op, re-implemented
             here as it was: three snapshots through psutil.process_iter (plan, sweep rescan,
             report) each with a scan of every process's fds and maps, plus one more scan for
             the report. That is a lower bound of the old module's time (NVML not counted);
  baseline   with --baseline DIR: Releaser.run() of another checkout (e.g. a `git worktree` of
             the commit before a change), in a child interpreter of its own.

The machine's load moves every figure; the ratios of one run do not move with it. Prints
medians, min-max and the ratios as JSON; asserts nothing about time.

    .venv/bin/python bench/release_busy_host.py [--procs 2000] [--runs 5] [--kind sleep|python]
                                                [--baseline DIR] [--no-old] [--profile]

--profile prints cProfile's figures of one no-op of this checkout instead.
Needs root, unshare, nsenter and tini.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # a program: tests.support, then what the tests see (tests/support/syspath.py)
from tests.support import syspath  # noqa: E402  pylint: disable=wrong-import-position

syspath.install()

PATTERN = r"sglang::|sglang\.launch_server"


# ---- the old scan, as it was (714fba8: _proctable.snapshot, _holders.scan) ---------------

def old_snapshot():
    import psutil
    attrs = ["pid", "ppid", "create_time", "username", "cmdline", "name", "status"]
    return {p.info["pid"]: p.info for p in psutil.process_iter(attrs) if p.info.get("create_time")}


def old_scan(devices):
    prefix = os.path.realpath(devices).rstrip("/") + "/"
    gpu = re.compile(r"^nvidia(\d+)$")
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        base = "/proc/" + entry
        try:
            fds = os.listdir(base + "/fd")
        except OSError:
            fds = []
        for fd in fds:
            try:
                target = os.readlink(base + "/fd/" + fd)
            except OSError:
                continue
            if target.startswith(prefix) and gpu.match(target[len(prefix):]):
                found.setdefault(int(entry), set()).add(target)
        try:
            with open(base + "/maps", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        if prefix.encode() in data:
            found.setdefault(int(entry), set()).add("maps")
    return found


def old_noop(devices):
    t0 = time.monotonic()
    for unused in range(3):  # _plan, the sweep's rescan, the plan after verification
        old_snapshot()
        old_scan(devices)
    old_scan(devices)  # _gpu_report
    return time.monotonic() - t0


def new_noop(devices):
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.release import ReleaseOptions, Releaser
    opts = ReleaseOptions(patterns=[PATTERN], gpus=None, sweep=True, protect=[], term_timeout=10.0,
                          timeout=60.0, max_used_mib=0.0, devices=devices, verify=True, force_broad=False,
                          sweep_users=[], nvml_timeout=20.0, v1_reserve_mib=1024.0)
    result = Releaser(opts).run()
    assert not result["changed"] and not result["killed"], result
    return result["elapsed"]


# ---- the floors: what any scan of every process costs at least ------------------------------

def _read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def floor_pass(names):
    """Seconds to read each process's /proc/PID/<name> once, for each of NAMES."""
    t0 = time.monotonic()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            for name in names:
                try:
                    _read("/proc/%s/%s" % (entry, name))
                except OSError:
                    pass
    return time.monotonic() - t0


# ---- another checkout's module, in a child interpreter --------------------------------------

BASELINE_CHILD = r"""
import os, sys, time
links, checkout = sys.argv[1], sys.argv[2]
sys.path[:0] = [links, checkout]
os.chdir(checkout)
exec(sys.argv[3])
for line in sys.stdin:
    print(new_noop(line.strip()), flush=True)
"""


class Baseline:
    """Releaser.run() of the checkout DIR, timed on request in a child interpreter."""

    def __init__(self, checkout, tmp):
        links = os.path.join(tmp, "collections")
        os.makedirs(os.path.join(links, "ansible_collections", "gpufleet"))
        os.symlink(os.path.abspath(checkout), os.path.join(links, "ansible_collections", "gpufleet", "serving"))
        import inspect
        source = "PATTERN = %r\n%s" % (PATTERN, inspect.getsource(new_noop))
        self.proc = subprocess.Popen([sys.executable, "-c", BASELINE_CHILD, links, checkout, source],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def noop(self, devices):
        self.proc.stdin.write(devices + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def profile(devices):
    """cProfile of one no-op, the top entries by own time, to stdout."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.runcall(new_noop, devices)
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(40)


def _figures(samples):
    return {"median": round(statistics.median(samples), 3), "min": round(min(samples), 3),
            "max": round(max(samples), 3)}


def inner(args):
    """Runs inside the namespace: start the idle processes, time each variant, print JSON."""
    if open("/proc/1/comm").read().strip() != "tini":
        raise SystemExit("not in a private PID namespace")
    code = "import time; time.sleep(3600)"
    argv = ["sleep", "3600"] if args.kind == "sleep" else [sys.executable, "-c", code]
    idle = [subprocess.Popen(argv, stdin=subprocess.DEVNULL) for unused in range(args.procs)]
    tmp = tempfile.mkdtemp(prefix="gf-busy-baseline-")
    baseline = Baseline(args.baseline, tmp) if args.baseline else None
    try:
        devices = os.environ["GPUFLEET_NVIDIA_DEVICES"]
        new_noop(devices)  # warm caches (imports, NVML helper) once
        if baseline is not None:
            baseline.noop(devices)
        if args.profile:
            return profile(devices)
        times = {"new": [], "stat": [], "cmdline": [], "stat_cmdline": [], "old": [], "baseline": []}
        for unused in range(args.runs):
            times["new"].append(new_noop(devices))
            times["stat"].append(floor_pass(["stat"]))
            times["cmdline"].append(floor_pass(["cmdline"]))
            times["stat_cmdline"].append(floor_pass(["stat", "cmdline"]))
            if not args.no_old:
                times["old"].append(old_noop(devices))
            if baseline is not None:
                times["baseline"].append(baseline.noop(devices))
        count = sum(1 for e in os.listdir("/proc") if e.isdigit())
        med = {k: statistics.median(v) for k, v in times.items() if v}
        out = {"processes": count, "kind": args.kind, "runs": args.runs,
               "new_module_s": _figures(times["new"]),
               "stat_floor_s": _figures(times["stat"]),
               "cmdline_floor_s": _figures(times["cmdline"]),
               "stat_cmdline_floor_s": _figures(times["stat_cmdline"]),
               "ratio_new_over_stat": round(med["new"] / med["stat"], 2),
               "ratio_new_over_cmdline": round(med["new"] / med["cmdline"], 2),
               "ratio_new_over_stat_cmdline": round(med["new"] / med["stat_cmdline"], 2)}
        if times["old"]:
            out.update({"old_scan_s": _figures(times["old"]), "ratio_old_over_new": round(med["old"] / med["new"], 1)})
        if baseline is not None:
            out.update({"baseline": os.path.abspath(args.baseline), "baseline_module_s": _figures(times["baseline"]),
                        "ratio_baseline_over_new": round(med["baseline"] / med["new"], 2),
                        "ratio_baseline_over_stat": round(med["baseline"] / med["stat"], 2)})
        print(json.dumps(out, indent=2))
    finally:
        if baseline is not None:
            baseline.close()
        shutil.rmtree(tmp, ignore_errors=True)
        for proc in idle:
            proc.kill()
        for proc in idle:
            proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kind", choices=("sleep", "python"), default="sleep")
    parser.add_argument("--baseline", metavar="DIR", help="another checkout whose module is timed in the same run")
    parser.add_argument("--no-old", action="store_true", help="leave out the old scan (slow: seconds a run)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's figures of one no-op instead")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        return inner(args)
    from simlib import fakegpu

    from tests.support import pidns
    from tests.support.paths import PYTHON
    if not pidns.available():
        raise SystemExit("needs root, unshare, nsenter and tini")
    with tempfile.TemporaryDirectory(prefix="gf-busy-") as tmp:
        root = fakegpu.init(os.path.join(tmp, "gpu"), gpus=8)
        env = dict(os.environ, **fakegpu.env(root))
        space = pidns.PidNamespace()
        try:
            out = space.run([PYTHON, os.path.abspath(__file__), "--inner", "--procs", str(args.procs),
                             "--runs", str(args.runs), "--kind", args.kind] + (["--profile"] if args.profile else [])
                            + (["--baseline", os.path.abspath(args.baseline)] if args.baseline else [])
                            + (["--no-old"] if args.no_old else []),
                            env=env, cwd=REPO, capture_output=True, text=True, timeout=1800)
        finally:
            space.stop()
    sys.stdout.write(out.stdout)
    if out.returncode:
        sys.stderr.write(out.stderr)
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
