#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How long a server group takes to go down once one of its ranks dies (issue 36, item 3).

Brings up a simulated fleet of two 8-GPU hosts (sim/simctl fleet, fast SGLang profile), and for each
run launches a TP16 SGLang group across them (playbooks/launch.yml), SIGKILLs one scheduler of a node
by PID (--victim: `sglang::scheduler_TP9` on sim-h2 by default; `sglang::scheduler_TP0` is on rank 0),
then polls the process table every 10 ms until no `sglang::scheduler_*` of either host is left. The
hosts are PID namespaces below this one: their processes are read in this namespace's /proc, as the
descendants of each host's init (hosts/hN/init.pid).

Prints each run's time to down and the median (min-max); fails a run that is not down within --limit s.

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


def records(fleet_dir, port, timeout=3.0):
    """What each host's watcher recorded (group_watch.py), waited for up to TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    out = {}
    while len(out) < 2 and time.monotonic() < deadline:
        for host in ("h1", "h2"):
            path = os.path.join(fleet_dir, "hosts", host, "lib", "gpufleet-serving", "sglang-%d.group-down.json" % port)
            try:
                with open(path) as handle:
                    found = json.load(handle)
                out[host] = "%s: node %s (rank %s) %s" % (host, found["node"], found["rank"], found["cause"])
            except (OSError, ValueError):
                continue
        time.sleep(0.05)
    return "; ".join(out[h] for h in sorted(out)) or "no record"


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
        group = os.path.join(fleet_dir, "group.yml")
        with open(group, "w") as handle:
            json.dump({"tp16": {"hosts": {"sim-h1": {}, "sim-h2": {}}, "vars": {
                "sglang_server_nodes": "{{ groups['tp16'] }}", "sglang_server_tp_size": 16,
                "sglang_server_dist_port": args.server_port + 1000, "sglang_server_dist_timeout": 10,
                "sglang_server_stop_timeout": 5, "sglang_server_ready_timeout": 120}}}, handle)
        inventories = [os.path.join(fleet_dir, "inventory.yml"), group]
        extra = {"sglang_server_port": args.server_port}
        times = []
        for run in range(args.runs):
            run_playbook("launch.yml", inventories, extra)
            victims = [pid for init in inits for pid, title in host_ranks(init).items() if title == args.victim]
            if len(victims) != 1:
                sys.exit("run %d: %d processes titled %s" % (run + 1, len(victims), args.victim))
            os.kill(victims[0], signal.SIGKILL)
            killed = time.monotonic()
            while any(host_ranks(init) for init in inits) and time.monotonic() < killed + args.limit:
                time.sleep(0.01)
            down = time.monotonic() - killed
            left = sum(len(host_ranks(init)) for init in inits)
            if left:
                sys.exit("run %d: %d ranks still alive %.1f s after %s was killed" % (run + 1, left, down, args.victim))
            times.append(down)
            print("run %d: %s killed, every rank of both hosts gone after %.3f s; %s" % (
                run + 1, args.victim, down, records(fleet_dir, args.server_port)))
        print("time to down (%d runs): median %.3f s (%.3f-%.3f)" % (len(times), statistics.median(times),
                                                                     min(times), max(times)))
        run_playbook("teardown.yml", inventories, extra)
    finally:
        subprocess.run(fleet + ["down", fleet_dir], check=False, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
