#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reset.yml and swap_to_eagle.yml on 8 simulated hosts at once, against 1 host.

For 1 host and then for N hosts (default 8), a simulated fleet (sim/simctl fleet: PID
and mount namespaces reached over real SSH, fake NVML, the simulated SGLang server with its
fast start-up profile) runs, with `-f N` (all hosts at once; swap_serial 100%):

  launch   playbooks/launch.yml: the base server on every host (not the subject; timed anyway)
  reset    playbooks/reset.yml: kill the servers by pattern, sweep, verify every GPU free
  swap     playbooks/swap_to_eagle.yml with a short benchmark: base server launched again
           (reset left none), baseline benchmark, drafter check, teardown with gpu_release,
           EAGLE-3 launch and wait, EAGLE-3 benchmark, report

Each playbook must succeed with every host clean / ok. Then `fleet down`, and a check that
nothing of the fleet is left: no process in any host's PID namespace, no namespace init or
unshare, nothing listening on the fleet's sshd or server ports, no process anywhere whose
command line carries the fleet's server port. Prints wall times, T_N / T_1 and the parallel
speed-up N x T_1 / T_N (N for perfectly parallel work, 1 for none); asserts nothing about time.

    .venv/bin/python bench/fleet_load.py [--hosts 8] [--runs 1] [--levels 1 4]

Needs root (the fleets' namespaces), openssh-server and tini. Ports: sshd 2797 (1 host) and
2798 (N hosts), SGLang 31797 and 31798. Fleets live in build/bench/fleet_load and are taken
down at the end, also after a failure.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMCTL = os.path.join(REPO, "sim", "simctl")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
sys.path.insert(0, os.path.join(REPO, "sim"))

from simlib import fleet_proc  # noqa: E402  (sim/ is put on the path above)


def sh(cmd, timeout=600):
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    return proc.returncode, proc.stdout + proc.stderr


class BenchFleet:
    def __init__(self, hosts, ssh_port, server_port):
        self.hosts, self.ssh_port, self.server_port = hosts, ssh_port, server_port
        self.dir = os.path.join(REPO, "build", "bench", "fleet_load", "h%d" % hosts)
        self.inventory = os.path.join(self.dir, "inventory.yml")
        self.states = []

    def up(self):
        rc, out = sh([os.path.join(VENV_BIN, "python"), SIMCTL, "fleet", "up", self.dir, "--hosts",
                      str(self.hosts), "--port", str(self.ssh_port)], timeout=120)
        if rc != 0:
            sys.exit("fleet up failed:\n" + out)
        for index in range(1, self.hosts + 1):
            with open(os.path.join(self.dir, "hosts", "h%d" % index, "host.json")) as handle:
                self.states.append(json.load(handle))

    def down(self):
        rc, out = sh([os.path.join(VENV_BIN, "python"), SIMCTL, "fleet", "down", self.dir], timeout=120)
        if rc != 0:
            sys.exit("fleet down failed:\n" + out)

    def playbook(self, name, extra_vars):
        cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-f", str(self.hosts), "-i", self.inventory,
               os.path.join(REPO, "playbooks", name),
               "-e", json.dumps(dict({"sglang_server_port": self.server_port}, **extra_vars))]
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
                              stdin=subprocess.DEVNULL, check=False)
        wall = time.monotonic() - started
        if proc.returncode != 0:
            raise RuntimeError("%s on %d hosts failed (rc %d):\n%s" % (
                name, self.hosts, proc.returncode, (proc.stdout + proc.stderr)[-5000:]))
        return wall

    def leftovers(self):
        left = []
        for state in self.states:
            for key in ("init", "unshare"):
                if fleet_proc.is_alive(state[key + "_pid"], state[key + "_start"]):
                    left.append("%s %s %d" % (state["name"], key, state[key + "_pid"]))
            left += ["%s pid %d" % (state["name"], p) for p in fleet_proc.pids_in_ns(state["pid_ns"])]
            for port in (self.ssh_port, self.server_port):
                try:
                    socket.create_connection((state["address"], port), timeout=1).close()
                    left.append("%s:%d listens" % (state["address"], port))
                except OSError:
                    pass
        marker = ("--port\0%d\0" % self.server_port).encode()
        for pid in fleet_proc.all_pids():
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as handle:
                    if marker in handle.read():
                        left.append("pid %d runs with --port %d" % (pid, self.server_port))
            except OSError:
                pass
        return left


def one_round(hosts, ssh_port, server_port, bench_vars, tmp):
    """Up, launch, reset, swap, down; return ({phase: wall}, leftovers, per-host checks)."""
    fleet = BenchFleet(hosts, ssh_port, server_port)
    fleet.up()
    times = {}
    try:
        times["launch"] = fleet.playbook("launch.yml", {})
        summary = os.path.join(tmp, "reset-%d.json" % hosts)
        times["reset"] = fleet.playbook("reset.yml", {"reset_summary_file": summary})
        with open(summary) as handle:
            reset = json.load(handle)["hosts"]
        clean = sum(1 for h in reset if h["outcome"] == "clean" and h["gpus_free"] == 8 and h["killed"] >= 10)
        report = os.path.join(tmp, "swap-%d" % hosts)
        times["swap"] = fleet.playbook("swap_to_eagle.yml", dict(bench_vars, swap_report_dir=report))
        with open(os.path.join(report, "swap_summary.json")) as handle:
            ok = sum(1 for h in json.load(handle)["hosts"] if h["outcome"] == "ok")
    finally:
        fleet.down()
    return times, fleet.leftovers(), {"reset_clean": clean, "swap_ok": ok}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1, help="rounds per fleet size (medians printed)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4], help="benchmark concurrency levels")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: the simulated hosts are PID and mount namespaces")
    bench_vars = {"benchmark": {"levels": args.levels, "requests_per_level": 4, "warmup_requests": 1,
                                "input_len": 64, "output_len": 32}}
    tmp = os.path.join(REPO, "build", "bench", "fleet_load", "out")
    os.makedirs(tmp, exist_ok=True)
    walls = {1: {}, args.hosts: {}}
    for n, ssh_port, server_port in ((1, 2797, 31797), (args.hosts, 2798, 31798)):
        for run in range(args.runs):
            times, left, checks = one_round(n, ssh_port, server_port, bench_vars, tmp)
            for phase, wall in times.items():
                walls[n].setdefault(phase, []).append(wall)
            print("%d host(s), run %d: launch %.1f s, reset %.1f s, swap %.1f s; reset clean %d/%d, "
                  "swap ok %d/%d; left after fleet down: %s"
                  % (n, run + 1, times["launch"], times["reset"], times["swap"], checks["reset_clean"], n,
                     checks["swap_ok"], n, ", ".join(left) if left else "nothing"), flush=True)
            if left or checks["reset_clean"] != n or checks["swap_ok"] != n:
                sys.exit("FAILED: not every host clean/ok, or something left running")
    n = args.hosts
    print()
    print("%-8s %10s %10s %8s %26s" % ("phase", "1 host s", "%d hosts s" % n, "T%d/T1" % n,
                                       "speed-up %d x T1 / T%d" % (n, n)))
    for phase in ("launch", "reset", "swap"):
        t1, tn = statistics.median(walls[1][phase]), statistics.median(walls[n][phase])
        print("%-8s %10.1f %10.1f %8.2f %26.2f" % (phase, t1, tn, tn / t1, n * t1 / tn))
    print("\n%d CPU cores; -f %d, swap_serial 100%%; benchmark levels %s, 4 requests each, 32 tokens"
          % (os.cpu_count(), n, args.levels))


if __name__ == "__main__":
    main()
