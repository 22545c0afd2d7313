#!/usr/bin/env bash
# demo_engines.sh: compare SGLang and vLLM, each with and without EAGLE-3, on a simulated
# 2-host x 8-GPU fleet, with the collection's own playbook, over real SSH.
#
#   sudo scripts/demo_engines.sh    (or: make demo-engines)
#
# 1. make setup when the checkout is not set up yet (venv, fake NVML, collection link);
# 2. sim/simctl fleet up: 2 simulated hosts (own PID and mount namespaces, sshd on
#    127.0.0.2/3, 8 fake GPUs each, the simulated SGLang and vLLM servers) in a temporary directory;
# 3. playbooks/compare_engines.yml with compare_eagle: base SGLang, base vLLM, SGLang + EAGLE-3,
#    vLLM + EAGLE-3 on each host, one after another, every GPU verified free between them
#    (short benchmark: levels 1 and 16, few requests);
# 4. the comparison table and where the report files are;
# 5. simctl fleet down on exit (also on failure or Ctrl-C): nothing is left running.
#
# Needs root (the simulated hosts are PID/mount namespaces) plus unshare, sshd and tini.
# Environment: DEMO_SSH_PORT (default 2392), DEMO_SERVER_PORT (default 31392; SGLang and vLLM
# take turns on it), DEMO_REPORT_DIR (default build/demo-engines/report in the checkout; kept).
set -euo pipefail

t0=$(date +%s)
. "$(dirname -- "$0")/demo_fleet.sh"
demo_start demo_engines.sh

ssh_port=${DEMO_SSH_PORT:-2392}
server_port=${DEMO_SERVER_PORT:-31392}
report_dir=${DEMO_REPORT_DIR:-$repo/build/demo-engines/report}

demo_fleet_up "$ssh_port" "servers on :$server_port"

export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-1}
vars=$(printf '{"compare_eagle": true, "sglang_server_port": %d, "vllm_server_port": %d, "compare_report_dir": "%s", "benchmark": {"levels": [1, 16], "requests_per_level": 16, "warmup_requests": 4, "input_len": 128, "output_len": 64}}' \
       "$server_port" "$server_port" "$report_dir")

echo "== compare the engines (playbooks/compare_engines.yml)"
rc=0
.venv/bin/ansible-playbook -i "$fleet/inventory.yml" playbooks/compare_engines.yml -e "$vars" || rc=$?

echo
if [ -f "$report_dir/compare.md" ]; then
    echo "== comparison ($report_dir/compare.md)"
    cat "$report_dir/compare.md"
    echo
    echo "== report files"
    for f in compare.json compare.md compare.png; do
        if [ -f "$report_dir/$f" ]; then echo "  $report_dir/$f"; else echo "  $f (not written)"; fi
    done
fi
echo "== demo wall time $(( $(date +%s) - t0 )) s (make setup and fleet up included)"
exit $rc
