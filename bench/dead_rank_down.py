#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How long a server group takes to go down once one of its ranks dies (issue 36, item 3).

Brings up a simulated fleet of two 8-GPU hosts (sim/simctl fleet, fast SGLang profile), and for each
run launches a TP16 SGLang group across them (playbooks/launch.yml), SIGKILLs one scheduler of a node
by PID (--victim: `sglang::scheduler_TP9` on sim-h2 by default; `sglang::scheduler_TP0` is on rank 0),
then polls every 10 ms until no `sglang::scheduler_*` of either host is left (down) and until every one
of the 16 GPUs of both hosts is free (no holder and no memory used in the host's fake NVML, as
`simctl gpu status` reads it; the fake driver keeps a freed allocation counted for its release delay,
120 ms, as a real driver takes 0.1-0.4 s). The hosts are PID namespaces below this one: their
processes are read in this namespace's /proc, as the descendants of each host's init (hosts/hN/init.pid).

Prints each run's time to down, to all GPUs free, and what each node's watcher verified itself (its
NVML check after the stop: all free or not, seconds after it saw the failure), then the medians
(min-max); fails a run that is not down, or whose GPUs are not all free, within --limit s.

    .venv/bin/python bench/dead_rank_down.py [--runs 3] [--victim sglang::scheduler_TP9] [--limit 5]
        [--ssh-port 2631] [--server-port 30631] [--dir DIR]

Needs root (the fleet's namespaces), openssh-server and tini; run it inside `unshare -n` where other
fleets share the loopback ports. The fleet lives in DIR (a new directory under /tmp by default) and is
taken down at the end.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMCTL = os.path.join(REPO, "sim", "simctl")
TITLE = "sglang::scheduler"
sys.path.insert(0, os.path.join(REPO, "sim"))
from simlib import fakegpu  # noqa: E402  # pylint: disable=wrong-import-position


def processes():
    """{pid: (ppid, cmdline)} of this namespace."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as handle:
                stat = handle.read()
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            continue
        out[int(name)] = (int(stat[stat.rindex(")") + 2:].split()[1]), cmdline)
    return out


def host_ranks(init_pid):
    """{pid: title} of the scheduler processes below one host's init."""
    procs = processes()
    children = {}
    for pid, (ppid, unused) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, [init_pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            if procs[child][1].startswith(TITLE):
                out[child] = procs[child][1]
    return out


def gpus_held(roots):
    """How many GPUs of the hosts (their fake NVML roots) a process holds or memory is used on."""
    return sum(1 for root in roots for gpu in fakegpu.read_status(root) if gpu["used_mib"] or gpu["holders"])


def records(fleet_dir, port, timeout=15.0):
    """What each host's watcher recorded (group_watch.py), waited for (its GPU check included) up to TIMEOUT s:
    (one line per host, {host: when (time.time()) its watcher saw its GPUs free, or None})."""
    deadline = time.monotonic() + timeout
    out, verified = {}, {}
    while len(verified) < 2 and time.monotonic() < deadline:
        for host in ("h1", "h2"):
            path = os.path.join(fleet_dir, "hosts", host, "lib", "gpufleet-serving", "sglang-%d.group-down.json" % port)
            try:
                with open(path) as handle:
                    found = json.load(handle)
            except (OSError, ValueError):
                continue
            gpus = found.get("gpus")
            out[host] = "%s: node %s (rank %s) %s, GPUs %s" % (
                host, found["node"], found["rank"], found["cause"],
                "not verified yet" if not gpus else "free after %.3f s (%d checked)" % (gpus["seconds"], len(gpus["gpus"]))
                if gpus.get("free") else "NOT free: %s" % (gpus.get("error") or gpus.get("gpus")))
            if gpus:
                verified[host] = gpus["at"] if gpus.get("free") else None
        time.sleep(0.05)
    return "; ".join(out[h] for h in sorted(out)) or "no record", verified


def run_playbook(name, inventories, extra):
    cmd = [os.path.join(REPO, ".venv", "bin", "ansible-playbook")]
    for inventory in inventories:
        cmd += ["-i", inventory]
    cmd += [os.path.join(REPO, "playbooks", name), "-e", json.dumps(extra)]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        sys.exit("%s failed (rc %d):\n%s" % (name, proc.returncode, (proc.stdout + proc.stderr)[-4000:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--victim", default="sglang::scheduler_TP9")
    parser.add_argument("--limit", type=float, default=5.0)
    parser.add_argument("--ssh-port", type=int, default=2631)
    parser.add_argument("--server-port", type=int, default=30631)
    parser.add_argument("--dir", help="the fleet's directory (default: a new one under /tmp)")
    args = parser.parse_args()
    fleet_dir = args.dir or tempfile.mkdtemp(prefix="dead-rank-down-")
    fleet = [sys.executable, SIMCTL, "fleet"]
    subprocess.run(fleet + ["down", fleet_dir], check=False, stdout=subprocess.DEVNULL)
    subprocess.run(fleet + ["up", fleet_dir, "--hosts", "2", "--port", str(args.ssh_port),
                            "--env", "SGLANG_SIM_PROFILE=fast"], check=True, stdout=subprocess.DEVNULL)
    try:
        inits = []
        for host in ("h1", "h2"):
            with open(os.path.join(fleet_dir, "hosts", host, "init.pid")) as handle:
                inits.append(int(handle.read()))
        roots = [os.path.join(fleet_dir, "hosts", host, "gpu") for host in ("h1", "h2")]
        group = os.path.join(fleet_dir, "group.yml")
        with open(group, "w") as handle:
            json.dump({"tp16": {"hosts": {"sim-h1": {}, "sim-h2": {}}, "vars": {
                "sglang_server_nodes": "{{ groups['tp16'] }}", "sglang_server_tp_size": 16,
                "sglang_server_dist_port": args.server_port + 1000, "sglang_server_dist_timeout": 10,
                "sglang_server_stop_timeout": 5, "sglang_server_ready_timeout": 120}}}, handle)
        inventories = [os.path.join(fleet_dir, "inventory.yml"), group]
        extra = {"sglang_server_port": args.server_port}
        times, freed, watched = [], [], []
        for run in range(args.runs):
            run_playbook("launch.yml", inventories, extra)
            if gpus_held(roots) != 16:
                sys.exit("run %d: %d of the 16 GPUs held after the launch" % (run + 1, gpus_held(roots)))
            victims = [pid for init in inits for pid, title in host_ranks(init).items() if title == args.victim]
            if len(victims) != 1:
                sys.exit("run %d: %d processes titled %s" % (run + 1, len(victims), args.victim))
            os.kill(victims[0], signal.SIGKILL)
            killed, killed_at = time.monotonic(), time.time()
            while any(host_ranks(init) for init in inits) and time.monotonic() < killed + args.limit:
                time.sleep(0.01)
            down = time.monotonic() - killed
            left = sum(len(host_ranks(init)) for init in inits)
            if left:
                sys.exit("run %d: %d ranks still alive %.1f s after %s was killed" % (run + 1, left, down, args.victim))
            while gpus_held(roots) and time.monotonic() < killed + args.limit:
                time.sleep(0.01)
            free = time.monotonic() - killed
            if gpus_held(roots):
                sys.exit("run %d: %d GPUs still held %.1f s after %s was killed" % (run + 1, gpus_held(roots), free, args.victim))
            times.append(down)
            freed.append(free)
            said, verified = records(fleet_dir, args.server_port)
            if len(verified) == 2 and None not in verified.values():
                watched.append(max(verified.values()) - killed_at)
            print("run %d: %s killed, every rank of both hosts gone after %.3f s, all 16 GPUs free after %.3f s "
                  "(this poll), %s (the watchers' own NVML checks); %s" % (
                      run + 1, args.victim, down, free, "%.3f s" % watched[-1] if watched and len(watched) == len(times)
                      else "not verified", said))
        for what, values in (("time to down", times), ("time to all 16 GPUs free", freed),
                             ("every GPU verified free by both watchers", watched)):
            if values:
                print("%s (%d): median %.3f s (%.3f-%.3f)"
                      % (what, len(values), statistics.median(values), min(values), max(values)))
        run_playbook("teardown.yml", inventories, extra)
    finally:
        subprocess.run(fleet + ["down", fleet_dir], check=False, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
