#!/usr/bin/env bash
# demo.sh: swap a simulated 2-host x 8-GPU fleet from SGLang to SGLang + EAGLE-3 and
# compare them, with the collection's own playbooks, over real SSH.
#
#   sudo scripts/demo.sh            (or: make demo)
#
# 1. make setup when the checkout is not set up yet (venv, fake NVML, collection link);
# 2. sim/simctl fleet up: 2 simulated hosts (own PID and mount namespaces, sshd on
#    127.0.0.2/3, 8 fake GPUs each, the simulated SGLang server) in a temporary directory;
# 3. playbooks/launch.yml: the base server on both hosts;
# 4. playbooks/swap_to_eagle.yml: baseline benchmark, teardown with verified GPU release,
#    EAGLE-3 launch, benchmark, report (short benchmark: levels 1 and 16, few requests);
# 5. the comparison table, where the report files are, and how long the demo took and how
#    much of it was spent waiting for servers to become ready;
# 6. simctl fleet down on exit (also on failure or Ctrl-C): nothing is left running.
#
# Needs root (the simulated hosts are PID/mount namespaces) plus unshare, sshd and tini.
# Environment: DEMO_SSH_PORT (default 2390), DEMO_SERVER_PORT (default 31390),
# DEMO_REPORT_DIR (default build/demo/report in the checkout; kept after the demo).
set -euo pipefail

t0=$(date +%s.%N)
. "$(dirname -- "$0")/demo_fleet.sh"
demo_start demo.sh

ssh_port=${DEMO_SSH_PORT:-2390}
server_port=${DEMO_SERVER_PORT:-31390}
report_dir=${DEMO_REPORT_DIR:-$repo/build/demo/report}

log="$work/ansible.log"

demo_fleet_up "$ssh_port" "SGLang on :$server_port"

export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-1}
vars=$(printf '{"sglang_server_port": %d, "swap_report_dir": "%s", "benchmark": {"levels": [1, 16], "requests_per_level": 16, "warmup_requests": 4, "input_len": 128, "output_len": 64}}' \
       "$server_port" "$report_dir")

echo "== launch the base SGLang server (playbooks/launch.yml)"
.venv/bin/ansible-playbook -i "$fleet/inventory.yml" playbooks/launch.yml -e "$vars" | tee "$log"

echo "== swap to EAGLE-3 and compare (playbooks/swap_to_eagle.yml)"
.venv/bin/ansible-playbook -i "$fleet/inventory.yml" playbooks/swap_to_eagle.yml -e "$vars" | tee -a "$log"

t1=$(date +%s.%N)
echo
echo "== comparison ($report_dir/benchmark.md)"
cat "$report_dir/benchmark.md"
echo
.venv/bin/python - "$report_dir" "$t0" "$t1" "$log" <<'EOF'
import json, os, re, sys
report_dir, t0, t1, log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
total = t1 - t0
# launch.yml prints "HOST: URL relaunched, ready after S s" per host.
launch_ready = [float(s) for s in re.findall(r"relaunched, ready after ([0-9.]+) s",
                                             re.sub(r"\x1b\[[0-9;]*m", "", open(log).read()))]
launch = max(launch_ready) if launch_ready else 0.0
summary = json.load(open(os.path.join(report_dir, "swap_summary.json")))
print("== report files")
for key in ("json", "markdown", "plot"):
    print("  %-8s %s" % (key, summary["report"][key] or "(not written)"))
html = os.path.join(report_dir, "benchmark.html")  # the whole report and its plot in one page
print("  html     %s" % (html if os.path.exists(html) else "(not written)"))
print("  summary  %s" % os.path.join(report_dir, "swap_summary.json"))
print("== where the time went")
waits = []
for h in sorted(summary["hosts"], key=lambda h: h["host"]):
    eagle = float(h.get("eagle_ready_seconds") or 0)
    base = float(h.get("base_ready_seconds") or 0)
    waits.append(eagle)
    print("  %s: %s; EAGLE-3 server ready after %.2f s%s, GPUs released in %s s"
          % (h["host"], h["outcome"], eagle,
             " (base server relaunched: %.2f s)" % base if h.get("base_ready_seconds") else "",
             h.get("release_seconds")))
# Hosts start in parallel: the fleet waits as long as its slowest host.
swap_wait = max(waits) if waits else 0.0
print("  demo wall time %.1f s (make setup and fleet up included); waiting for the base servers"
      " (launch.yml) %.1f s, for the EAGLE-3 servers (swap_to_eagle.yml) %.1f s (slowest host each)"
      % (total, launch, swap_wait))
print("  waiting for servers: %.1f s of %.1f s (%.0f%%); the rest is Ansible over SSH and the benchmarks"
      % (launch + swap_wait, total, 100.0 * (launch + swap_wait) / total))
EOF
