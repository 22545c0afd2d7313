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

--task-times also records each task's wall time (bench/callbacks/task_times.py, for both
checkouts) and prints, per checkout, the time of the role argument-spec validation tasks
("Validating arguments against arg spec ...") in each kind of run, per role: what a role
included under another (the server roles' internal _server role) costs.

--baseline DIR also times another checkout of the collection (e.g. `git archive COMMIT | tar -x
-C DIR`, with DIR/.venv and DIR/build/collections set up as in this one) on a second fleet of its
own, in the same run: each run of each measurement alternates between the two checkouts, so
both see the same load, and the ratios (this checkout / baseline) are printed. Both fleets are
this checkout's simulator; only the playbooks, roles and modules differ.

    .venv/bin/python bench/relaunch_overhead.py [--runs 5] [--ssh-port 2611] [--server-port 30611]
        [--baseline DIR] [--task-times]

Needs root (the fleet's namespaces), openssh-server and tini. The fleet lives in
build/bench/relaunch and is taken down at the end, also after a failure.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMCTL = os.path.join(REPO, "sim", "simctl")
CALLBACKS = os.path.join(REPO, "bench", "callbacks")
VALIDATION = "Validating arguments against arg spec"
FACT_TASKS = {"Record facts for later plays": "sglang_server_result",
              "Record the teardown for later plays": "sglang_server_teardown"}


class Checkout:
    """One checkout of the collection under test and the simulated fleet it is timed on."""

    def __init__(self, name, repo, fleet, ssh_port, server_port):
        self.name = name
        self.repo = repo
        self.fleet = fleet
        self.inventory = os.path.join(fleet, "inventory.yml")
        self.ssh_port = ssh_port
        self.server_port = server_port
        self.counter = 1000  # --max-running-requests of the last launch

    def fleet_command(self, *args, check=True):
        subprocess.run([sys.executable, SIMCTL, "fleet", *args], check=check, stdout=subprocess.DEVNULL)

    def up(self):
        self.fleet_command("down", self.fleet)
        self.fleet_command("up", self.fleet, "--hosts", "2", "--port", str(self.ssh_port),
                           "--env", "SGLANG_SIM_PROFILE=fast")

    def down(self):
        self.fleet_command("down", self.fleet, check=False)


def run_playbook(checkout, extra_vars, limit=None, task_times=False):
    """Run CHECKOUT's launch.yml; return (wall seconds, {host: {fact name: value}}, tasks on sim-h1,
    [[task name, seconds], ...] or None)."""
    venv_bin = os.path.join(checkout.repo, ".venv", "bin")
    cmd = [os.path.join(venv_bin, "ansible-playbook"), "-v", "-i", checkout.inventory,
           os.path.join(checkout.repo, "playbooks", "launch.yml"), "-e", json.dumps(extra_vars)]
    if limit:
        cmd += ["-l", limit]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(checkout.repo, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
    times_file = None
    if task_times:
        fd, times_file = tempfile.mkstemp(prefix="task-times-", suffix=".jsonl")
        os.close(fd)
        env.update(ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, ANSIBLE_CALLBACKS_ENABLED="task_times",
                   GPUFLEET_TASK_TIMES=times_file)
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=checkout.repo, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit("%s: ansible-playbook failed (rc %d):\n%s\n%s" % (
            checkout.name, proc.returncode, proc.stdout[-4000:], proc.stderr[-2000:]))
    times = None
    if times_file:
        with open(times_file, encoding="utf-8") as handle:
            times = [t for line in handle for t in json.loads(line)]
        os.unlink(times_file)
    return wall, parse_facts(proc.stdout), count_tasks(proc.stdout, "sim-h1"), times


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


def measure_once(name, checkout, hosts, limit=None, change=True, task_times=False):
    """One launch.yml run on CHECKOUT's fleet: a relaunch (CHANGE) or a no-op pass."""
    if change:
        checkout.counter += 1
    extra = {"sglang_server_port": checkout.server_port,
             "sglang_server_max_running_requests": checkout.counter}
    wall, facts, tasks, times = run_playbook(checkout, extra, limit, task_times)
    results = [facts.get(h, {}).get("sglang_server_result") for h in hosts]
    if any(r is None for r in results):
        sys.exit("%s, %s: no sglang_server_result for %s" % (checkout.name, name, hosts))
    relaunched = [bool(r["relaunched"]) for r in results]
    if relaunched != [change] * len(hosts):
        sys.exit("%s, %s: expected relaunched=%s on %s, got %s" % (checkout.name, name, change, hosts,
                                                                   relaunched))
    ready = max(float(r["ready_seconds"]) for r in results) if change else 0.0
    release = [float(facts[h]["sglang_server_teardown"]["release_seconds"])
               for h in hosts if "sglang_server_teardown" in facts.get(h, {})]
    return {"wall": wall, "ready": ready, "overhead": wall - ready,
            "release": max(release) if release else None, "tasks": tasks, "validation": validation(times),
            "task_times": times}


def validation(times):
    """{role: seconds} of the argument-spec validation tasks of one run (None without task times)."""
    if times is None:
        return None
    out = {}
    for name, seconds in times:
        if VALIDATION in name:
            role = name.split(" : ")[0] if " : " in name else "(play)"
            out[role] = out.get(role, 0.0) + seconds
    return out


def measure(checkouts, runs, task_times=False):
    """{checkout name: {measurement: [row, ...]}}; each run alternates between the checkouts."""
    both = ["sim-h1", "sim-h2"]
    plan = [("cold launch x2", 1, both, None, True), ("noop x2", runs, both, None, False),
            ("swap x1", runs, ["sim-h1"], "sim-h1", True), ("swap x2", runs, both, None, True)]
    results = {c.name: {} for c in checkouts}
    for name, count, hosts, limit, change in plan:
        for unused in range(count):
            for checkout in checkouts:
                row = measure_once(name, checkout, hosts, limit, change, task_times)
                results[checkout.name].setdefault(name, []).append(row)
    return results


def report(name, results, runs):
    print("%s: relaunch overhead, simulated fleet (fast profile), %d runs each; seconds, median (min-max)"
          % (name, runs))
    print("%-15s %-20s %-20s %-20s %-20s %s" % ("run", "wall", "ready_seconds", "overhead",
                                                "gpu_release", "tasks on sim-h1"))
    for kind, rows in results.items():
        print("%-15s %-20s %-20s %-20s %-20s %d" % (
            kind, summary([r["wall"] for r in rows]), summary([r["ready"] for r in rows]),
            summary([r["overhead"] for r in rows]),
            summary([r["release"] for r in rows if r["release"] is not None]),
            statistics.median(r["tasks"] for r in rows)))
    for kind, rows in results.items():
        roles = sorted({role for r in rows for role in (r["validation"] or {})})
        if roles:
            print("%-15s argument-spec validation: %s" % (kind, ", ".join(
                "%s %s" % (role, summary([(r["validation"] or {}).get(role, 0.0) for r in rows])) for role in roles)))
    figures = headline(results)
    print("swap overhead: %.2f s on 1 host, %.2f s on 2 hosts in parallel (x%.2f); "
          "a no-op pass costs %.2f s" % (figures["swap x1"], figures["swap x2"],
                                         figures["swap x2"] / figures["swap x1"], figures["noop x2"]))
    return figures


def headline(results):
    """The three figures the README quotes: no-op wall time, swap overheads (medians)."""
    return {"noop x2": statistics.median(r["wall"] for r in results["noop x2"]),
            "swap x1": statistics.median(r["overhead"] for r in results["swap x1"]),
            "swap x2": statistics.median(r["overhead"] for r in results["swap x2"])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ssh-port", type=int, default=2611)
    parser.add_argument("--server-port", type=int, default=30611)
    parser.add_argument("--baseline", metavar="DIR", help="also time this checkout, alternating runs")
    parser.add_argument("--task-times", action="store_true",
                        help="also time each task; print the argument-spec validation tasks' share")
    parser.add_argument("--json", help="also write the raw rows here")
    args = parser.parse_args()

    checkouts = [Checkout("this checkout", REPO, os.path.join(REPO, "build", "bench", "relaunch"),
                          args.ssh_port, args.server_port)]
    if args.baseline:
        checkouts.append(Checkout("baseline " + args.baseline, os.path.abspath(args.baseline),
                                  os.path.join(REPO, "build", "bench", "relaunch-baseline"),
                                  args.ssh_port + 1, args.server_port + 100))
    try:
        for checkout in checkouts:
            checkout.up()
        results = measure(checkouts, args.runs, args.task_times)
    finally:
        for checkout in checkouts:
            checkout.down()

    figures = {c.name: report(c.name, results[c.name], args.runs) for c in checkouts}
    if args.baseline:
        ours, base = (figures[c.name] for c in checkouts)
        print("this checkout / baseline (medians): " + ", ".join(
            "%s %.2f" % (kind, ours[kind] / base[kind]) for kind in ours))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
