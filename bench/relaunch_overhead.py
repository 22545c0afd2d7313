#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a relaunch (swap) costs beyond the server's own start-up, per host and for 2 hosts.

Brings up a simulated fleet of two 8-GPU hosts (sim/simctl fleet: PID and mount
namespaces reached over real SSH, fake NVML, the simulated SGLang server with its fast
start-up profile), launches the server on both, then times

  noop     `ansible-playbook playbooks/launch.yml` with nothing changed (both hosts kept)
  swap x1  the same with a changed configuration, limited to sim-h1 (-l sim-h1)
  swap x2  the same on both hosts at once

Each swap changes --max-running-requests to a value not used before, so every run tears
the server down (SIGTERM and drain, gpu_release with its NVML check) and relaunches it.
From each run's own output (-v) it takes the role's facts: sglang_server_result.ready_seconds
(launch to ready, as the role measured it) and sglang_server_teardown.release_seconds.

  overhead = wall time of ansible-playbook - ready_seconds (the largest of the hosts)

i.e. Ansible's start-up, SSH, the role's checks, the stop, the GPU release and verification,
and the launch itself. It also counts the tasks that ran on sim-h1 (ok or changed, not
skipped or included): a figure that does not depend on how loaded the machine is.
Prints medians (min-max); asserts nothing about time.

    .venv/bin/python bench/relaunch_overhead.py [--runs 5] [--ssh-port 2611] [--server-port 30611]

Needs root (the fleet's namespaces), openssh-server and tini. The fleet lives in
build/bench/relaunch and is taken down at the end, also after a failure.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMCTL = os.path.join(REPO, "sim", "simctl")
PLAYBOOK = os.path.join(REPO, "playbooks", "launch.yml")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
FACT_TASKS = {"Record facts for later plays": "sglang_server_result",
              "Record the teardown for later plays": "sglang_server_teardown"}


def run_playbook(inventory, extra_vars, limit=None):
    """Run launch.yml; return (wall seconds, {host: {fact name: value}})."""
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-v", "-i", inventory, PLAYBOOK,
           "-e", json.dumps(extra_vars)]
    if limit:
        cmd += ["-l", limit]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit("ansible-playbook failed (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout[-4000:],
                                                               proc.stderr[-2000:]))
    return wall, parse_facts(proc.stdout), count_tasks(proc.stdout, "sim-h1")


def parse_facts(out):
    """The facts of the role's two set_fact tasks, from the -v lines `ok: [HOST] => {...}`."""
    facts, current = {}, None
    for line in out.splitlines():
        if line.startswith("TASK ["):
            current = next((fact for task, fact in FACT_TASKS.items() if task in line), None)
        elif current and line.startswith("ok: [") and "] => " in line:
            host = line[len("ok: ["):line.index("]")]
            result = json.loads(line.split("] => ", 1)[1])
            facts.setdefault(host, {})[current] = result["ansible_facts"][current]
    return facts


def count_tasks(out, host):
    """Tasks that ran on HOST: result lines `ok: [HOST]` or `changed: [HOST]` (skips and includes not counted)."""
    return sum(1 for line in out.splitlines()
               if line.startswith(("ok: [%s]" % host, "changed: [%s]" % host)))


def summary(values):
    if not values:
        return "-"
    return "%.2f (%.2f-%.2f)" % (statistics.median(values), min(values), max(values))


def measure(name, inventory, runs, hosts, base_vars, counter, limit=None, change=True):
    rows = []
    for unused in range(runs):
        extra = dict(base_vars)
        if change:
            counter[0] += 1
        extra["sglang_server_max_running_requests"] = counter[0]
        wall, facts, tasks = run_playbook(inventory, extra, limit)
        results = [facts.get(h, {}).get("sglang_server_result") for h in hosts]
        if any(r is None for r in results):
            sys.exit("%s: no sglang_server_result for %s" % (name, hosts))
        relaunched = [bool(r["relaunched"]) for r in results]
        if relaunched != [change] * len(hosts):
            sys.exit("%s: expected relaunched=%s on %s, got %s" % (name, change, hosts, relaunched))
        ready = max(float(r["ready_seconds"]) for r in results) if change else 0.0
        release = [float(facts[h]["sglang_server_teardown"]["release_seconds"])
                   for h in hosts if "sglang_server_teardown" in facts.get(h, {})]
        rows.append({"wall": wall, "ready": ready, "overhead": wall - ready,
                     "release": max(release) if release else None, "tasks": tasks})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ssh-port", type=int, default=2611)
    parser.add_argument("--server-port", type=int, default=30611)
    parser.add_argument("--json", help="also write the raw rows here")
    args = parser.parse_args()

    fleet = os.path.join(REPO, "build", "bench", "relaunch")
    inventory = os.path.join(fleet, "inventory.yml")
    subprocess.run([sys.executable, SIMCTL, "fleet", "down", fleet], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, SIMCTL, "fleet", "up", fleet, "--hosts", "2",
                    "--port", str(args.ssh_port), "--env", "SGLANG_SIM_PROFILE=fast"],
                   check=True, stdout=subprocess.DEVNULL)
    try:
        base = {"sglang_server_port": args.server_port}
        counter = [1000]
        hosts = ["sim-h1", "sim-h2"]
        cold = measure("cold launch", inventory, 1, hosts, base, counter)
        results = {
            "cold launch x2": cold,
            "noop x2": measure("noop", inventory, args.runs, hosts, base, counter, change=False),
            "swap x1": measure("swap x1", inventory, args.runs, ["sim-h1"], base, counter,
                               limit="sim-h1"),
            "swap x2": measure("swap x2", inventory, args.runs, hosts, base, counter),
        }
    finally:
        subprocess.run([sys.executable, SIMCTL, "fleet", "down", fleet], check=False,
                       stdout=subprocess.DEVNULL)

    print("relaunch overhead, simulated fleet (fast profile), %d runs each; seconds, median (min-max)"
          % args.runs)
    print("%-15s %-20s %-20s %-20s %-20s %s" % ("run", "wall", "ready_seconds", "overhead",
                                                "gpu_release", "tasks on sim-h1"))
    for name, rows in results.items():
        print("%-15s %-20s %-20s %-20s %-20s %d" % (
            name, summary([r["wall"] for r in rows]), summary([r["ready"] for r in rows]),
            summary([r["overhead"] for r in rows]),
            summary([r["release"] for r in rows if r["release"] is not None]),
            statistics.median(r["tasks"] for r in rows)))
    one = statistics.median(r["overhead"] for r in results["swap x1"])
    two = statistics.median(r["overhead"] for r in results["swap x2"])
    noop = statistics.median(r["wall"] for r in results["noop x2"])
    print("swap overhead: %.2f s on 1 host, %.2f s on 2 hosts in parallel (x%.2f); "
          "a no-op pass costs %.2f s" % (one, two, two / one, noop))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
