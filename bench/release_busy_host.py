#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_release's no-op on a busy host: N idle processes, nothing to release (issue 11 item 12).

In a private PID namespace (tests/support/pidns.py) on a fake 8-GPU host, this starts
N idle processes (`sleep`, or with --kind python idle Python interpreters, whose maps and
fd tables are larger), then, alternately for --runs rounds:

  new  Releaser.run() of plugins/module_utils (patterns sglang, all GPUs, nothing matches,
       every GPU free): the module's own `elapsed`, without Ansible and interpreter start;
  old  the /proc work the previous release did for the same no-op, re-implemented here as
       it was (commit 714fba8): three snapshots through psutil.process_iter (plan, sweep
       rescan, report) each with a scan of every process's fds and maps, plus one more scan
       for the report. That is a lower bound of the old module's time (NVML not counted).

Prints medians, min-max and the ratio old/new as JSON; asserts nothing about time.

    .venv/bin/python bench/release_busy_host.py [--procs 2000] [--runs 5] [--kind sleep|python]

Needs root, unshare, nsenter and tini.
"""
import argparse
import json
import os
import re
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


def inner(args):
    """Runs inside the namespace: start the idle processes, time both, print JSON."""
    if open("/proc/1/comm").read().strip() != "tini":
        raise SystemExit("not in a private PID namespace")
    code = "import time; time.sleep(3600)"
    argv = ["sleep", "3600"] if args.kind == "sleep" else [sys.executable, "-c", code]
    idle = [subprocess.Popen(argv, stdin=subprocess.DEVNULL) for unused in range(args.procs)]
    try:
        devices = os.environ["GPUFLEET_NVIDIA_DEVICES"]
        new_noop(devices)  # warm caches (imports, NVML helper) once
        news, olds = [], []
        for unused in range(args.runs):
            news.append(new_noop(devices))
            olds.append(old_noop(devices))
        count = sum(1 for e in os.listdir("/proc") if e.isdigit())
        med_new, med_old = statistics.median(news), statistics.median(olds)
        print(json.dumps({
            "processes": count, "kind": args.kind, "runs": args.runs,
            "new_module_s": {"median": round(med_new, 3), "min": round(min(news), 3), "max": round(max(news), 3)},
            "old_scan_s": {"median": round(med_old, 3), "min": round(min(olds), 3), "max": round(max(olds), 3)},
            "ratio_old_over_new": round(med_old / med_new, 1) if med_new else None,
        }, indent=2))
    finally:
        for proc in idle:
            proc.kill()
        for proc in idle:
            proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kind", choices=("sleep", "python"), default="sleep")
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
                             "--runs", str(args.runs), "--kind", args.kind],
                            env=env, cwd=REPO, capture_output=True, text=True, timeout=1800)
        finally:
            space.stop()
    sys.stdout.write(out.stdout)
    if out.returncode:
        sys.stderr.write(out.stderr)
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
