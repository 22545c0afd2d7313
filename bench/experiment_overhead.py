#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What playbooks/experiment.yml costs per variant beyond the server's own start-up, and what
spreading an experiment over 2 hosts saves, on the simulated fleet, in one run.

Brings up a simulated fleet of two 8-GPU hosts (sim/simctl fleet: PID and mount namespaces
reached over real SSH, fake NVML, the simulated SGLang with its fast start-up profile) and runs
one experiment of V base-SGLang variants (each its own --max-running-requests, so each is a
fresh launch; a tiny benchmark: one level, 2 requests, 16 tokens) twice:

  1 host   -l sim-h1, every variant on sim-h1
  spread   both hosts, spread: true (host i runs every second variant), records set aside first

From the records (RESULTS/records/HOST/VARIANT.json) it takes each variant's
server.ready_seconds (launch to ready, as the role measured it) and, with the task_times
callback (bench/callbacks), the wall time of each benchmark task:

  overhead per variant = (wall of the 1-host run - sum of ready_seconds - benchmark task time) / V

i.e. Ansible, SSH, the plan of every variant, the checks, the stop, the GPU release and its NVML
verification, the record written on the controller, and the report. The server-start figure of
the same run is the mean ready_seconds. The spread ratio is the spread run's wall time over the
1-host run's. Only the variant loop divides over hosts, so it also prints the best spread ratio (the
1-host run's fixed part plus half its loop) and the floor under any cut of the fixed part (the spread
run's loop over the 1-host run's: what the two hosts side by side cost a position on this machine).
Prints these figures, the number of tasks the 1-host run started (run or skipped;
each costs the controller time whatever the load), the CPU seconds the controller spent on the
1-host run (ansible-playbook with its workers and SSH clients; less dependent on the load than
wall time) and the load average before and after (the machine's other work weighs on both);
asserts nothing about time.

    .venv/bin/python bench/experiment_overhead.py [--variants 4] [--ssh-port 2621] [--server-port 30621]
                                                  [--sglang '{"load_seconds": 20}'] [--root DIR]

Needs root (the fleet's namespaces), openssh-server and tini. The fleet lives in
build/bench/experiment (or --root) and is taken down at the end, also after a failure.
"""
import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMCTL = os.path.join(REPO, "sim", "simctl")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
CALLBACKS = os.path.join(REPO, "bench", "callbacks")
BENCH_TASK = "Benchmark the server"
# The variant loop: from the include that starts it to each variant's last task.
LOOP_FIRST = "variant by variant"
LOOP_LAST = "Record the variant on the controller"


def fleet(command, root, *extra):
    proc = subprocess.run([os.path.join(VENV_BIN, "python"), SIMCTL, "fleet", command, root, *extra],
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0 and command == "up":
        sys.exit("fleet up failed: %s%s" % (proc.stdout, proc.stderr))


def experiment_file(root, variants, server_port):
    doc = {"reference": "v1", "benchmark": {"levels": [1], "requests_per_level": 2, "warmup_requests": 0,
                                            "input_len": 32, "output_len": 16},
           "variants": [{"name": "v%d" % i, "engine": "sglang",
                         "server": {"port": server_port, "max_running_requests": 100 + i}}
                        for i in range(1, variants + 1)]}
    path = os.path.join(root, "overhead.experiment.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(doc, handle, sort_keys=False)
    return path


def run(inventory, path, results, server_port, limit=None, spread=False):
    """One experiment.yml run; (wall seconds, [record], {task name: seconds}, task starts, controller CPU seconds,
    seconds in the variant loop)."""
    if spread:
        with open(path, encoding="utf-8") as handle:
            doc = yaml.safe_load(handle)
        doc["spread"] = True
        path = path.replace(".experiment.yml", "-spread.experiment.yml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(doc, handle, sort_keys=False)
    fd, times_file = tempfile.mkstemp(prefix="task-times-", suffix=".jsonl")
    os.close(fd)
    extra = {"experiment_file": path, "experiment_results_dir": results, "sglang_server_port": server_port,
             "experiment_fresh": True,
             "experiment_bench_progress_file": os.path.join(os.path.dirname(results), "bench.progress")}
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", inventory,
           os.path.join(REPO, "playbooks", "experiment.yml"), "-e", json.dumps(extra)]
    if limit:
        cmd += ["-l", limit]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
               ANSIBLE_CALLBACKS_ENABLED="task_times", GPUFLEET_TASK_TIMES=times_file)
    started, cpu_before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    wall = time.monotonic() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    if proc.returncode != 0:
        sys.exit("experiment.yml failed (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout[-4000:],
                                                             proc.stderr[-2000:]))
    times, starts, ordered = {}, 0, []
    with open(times_file, encoding="utf-8") as handle:
        for line in handle:
            for name, seconds in json.loads(line):
                times[name] = times.get(name, 0.0) + seconds
                starts += 1
                ordered.append((name, seconds))
    names = [name for name, seconds in ordered]
    first = next((i for i, name in enumerate(names) if LOOP_FIRST in name), 0)
    last = max((i for i, name in enumerate(names) if LOOP_LAST in name), default=len(names) - 1)
    loop = sum(seconds for name, seconds in ordered[first:last + 1])
    os.unlink(times_file)
    records = []
    for rec_path in glob.glob(os.path.join(results, "records", "*", "*.json")):
        with open(rec_path, encoding="utf-8") as handle:
            records.append(json.load(handle))
    return wall, records, times, starts, cpu, loop


def _load(triple):
    return "/".join("%.2f" % x for x in triple)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--ssh-port", type=int, default=2621)
    parser.add_argument("--server-port", type=int, default=30621)
    parser.add_argument("--top", type=int, default=15, help="slowest tasks to list")
    parser.add_argument("--sglang", default="", metavar="JSON",
                        help='simulator knobs (simctl fleet up --sglang), e.g. {"load_seconds": 20} for a start-up '
                             'long enough that it, not the overhead, sets the spread ratio')
    parser.add_argument("--root", default=os.path.join(REPO, "build", "bench", "experiment"),
                        help="where the fleet and its results live (default %(default)s); another one lets two "
                             "checkouts measure at the same time")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    load_before = os.getloadavg()
    fleet("down", root)
    fleet("up", root, "--hosts", "2", "--port", str(args.ssh_port), *(["--sglang", args.sglang] if args.sglang else []))
    try:
        path = experiment_file(root, args.variants, args.server_port)
        inventory = os.path.join(root, "inventory.yml")
        one_wall, one_records, one_times, one_starts, one_cpu, one_loop = run(
            inventory, path, os.path.join(root, "results-1"), args.server_port, limit="sim-h1")
        two = run(inventory, path, os.path.join(root, "results-2"), args.server_port, spread=True)
        two_wall, two_records, two_loop = two[0], two[1], two[-1]
    finally:
        fleet("down", root)
    ready = [float(r["server"]["ready_seconds"]) for r in one_records if r.get("outcome") == "ok"]
    if len(ready) != args.variants or len(two_records) != args.variants:
        sys.exit("expected %d ok records per run, got %d and %d" % (args.variants, len(ready), len(two_records)))
    bench = sum(s for name, s in one_times.items() if BENCH_TASK in name)
    overhead = (one_wall - sum(ready) - bench) / args.variants
    print("experiment.yml on the simulated fleet (fast profile%s), %d base-SGLang variants; load average "
          "(1, 5, 15 min) before %s, after %s" % (", knobs " + args.sglang if args.sglang else "", args.variants,
                                                  _load(load_before), _load(os.getloadavg())))
    print("  1 host : wall %.1f s; server start-up (ready_seconds) mean %.2f s, sum %.1f s; benchmark tasks %.1f s"
          % (one_wall, sum(ready) / len(ready), sum(ready), bench))
    print("  overhead per variant beyond the server's start-up and the benchmark: %.2f s" % overhead)
    print("  spread over 2 hosts: wall %.1f s = %.2fx the 1-host run" % (two_wall, two_wall / one_wall))
    # What the spread can save: only the variant loop divides over the hosts; the rest (ansible-playbook's
    # start-up, the plan, the clean start, the report) runs once whatever the number of hosts.
    fixed, each = one_wall - one_loop, one_loop / args.variants
    half = (fixed + each * -(-args.variants // 2)) / one_wall
    print("  1 host, apart from the variant loop (start-up, plan, clean start, report): %.1f s; the loop %.2f s a variant;"
          " spread over 2 hosts at best (no slower a variant) %.2fx" % (fixed, each, half))
    # The floor no cut of the fixed part can go under: the spread run's own loop (its hosts side by side,
    # sharing the controller's CPU and this machine's) over the 1-host run's loop. The fixed part only adds
    # to both walls, which moves the ratio towards 1.
    positions = -(-args.variants // 2)
    print("  the variant loop on 2 hosts: %.2f s a position (%.2f s a variant alone, %.2fx); with no fixed part at"
          " all the spread would be %.2fx" % (two_loop / positions, each, two_loop / positions / each,
                                              two_loop / one_loop))
    # Independent of the machine's load: each task the play starts (run or skipped) costs the controller time.
    print("  tasks started in the 1-host run: %d" % one_starts)
    # Less dependent on the load than wall time: what the controller itself computed (ansible-playbook,
    # its workers and SSH clients; the hosts' module runs are not its children).
    print("  controller CPU of the 1-host run: %.1f s" % one_cpu)
    print("  the 1-host run's slowest tasks (seconds, all variants):")
    for name, seconds in sorted(one_times.items(), key=lambda kv: -kv[1])[:args.top]:
        print("    %6.2f  %s" % (seconds, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
