#!/usr/bin/env bash
# demo_rollout.sh: a rolling swap to EAGLE-3 behind the real sglang-router 0.3.2 that loses no
# request, on a simulated 3-host x 8-GPU fleet, with the collection's own playbooks, over real SSH.
#
#   sudo scripts/demo_rollout.sh    (or: make demo-rollout)
#
# 1. make setup when the checkout is not set up yet (venv, fake NVML, the router, collection link);
# 2. sim/simctl fleet up: 3 simulated hosts (sshd on 127.0.0.2-4) in a temporary directory;
# 3. playbooks/launch.yml: the base SGLang server on every host;
# 4. the real router (build/router/bin/smg) on the controller in front of the 3 servers;
# 5. playbooks/swap_to_eagle.yml with router_url, swap_serial 1 and rollout_probe: one host at a
#    time leaves the router, drains, is relaunched with EAGLE-3 and put back, while 8 streaming
#    clients send requests through the router for the whole rollout (docs/rollout.md);
# 6. the probe's table (rollout_probe.md: requests, failed, broken streams, TTFT/TPOT before,
#    during and after, healthy workers, per-host drain) and its plot; exits non-zero unless
#    0 requests failed and 0 streams broke;
# 7. the router stopped and simctl fleet down on exit (also on failure or Ctrl-C).
#
# Needs root (the simulated hosts are PID/mount namespaces) plus unshare, sshd and tini.
# Environment: DEMO_SSH_PORT (default 2394), DEMO_SERVER_PORT (default 31394), DEMO_ROUTER_PORT
# (default 30394), DEMO_REPORT_DIR (default build/demo-rollout/report in the checkout; kept).
set -euo pipefail

. "$(dirname -- "$0")/demo_fleet.sh"
demo_start demo_rollout.sh
[ -x build/router/bin/smg ] || make setup

ssh_port=${DEMO_SSH_PORT:-2394}
server_port=${DEMO_SERVER_PORT:-31394}
router_port=${DEMO_ROUTER_PORT:-30394}
report_dir=${DEMO_REPORT_DIR:-$repo/build/demo-rollout/report}
router_url="http://127.0.0.1:$router_port"
router_pid=

stop_router() {
    local status=$?
    if [ -n "$router_pid" ]; then
        echo "== stopping the router (pid $router_pid)"
        kill "$router_pid" 2>/dev/null || true
        wait "$router_pid" 2>/dev/null || true
    fi
    (exit "$status")
    demo_cleanup
}
trap stop_router EXIT

demo_fleet_up "$ssh_port" "SGLang on :$server_port" 3

export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-1}
echo "== launch the base SGLang server (playbooks/launch.yml)"
.venv/bin/ansible-playbook -i "$fleet/inventory.yml" playbooks/launch.yml -e "{\"sglang_server_port\": $server_port}"

workers=(http://127.0.0.2:"$server_port" http://127.0.0.3:"$server_port" http://127.0.0.4:"$server_port")
echo "== the real sglang-router 0.3.2 at $router_url in front of ${workers[*]}"
build/router/bin/smg launch --host 127.0.0.1 --port "$router_port" --prometheus-host 127.0.0.1 \
    --prometheus-port $((router_port + 1)) --policy round_robin --worker-urls "${workers[@]}" \
    > "$work/router.log" 2>&1 &
router_pid=$!
.venv/bin/python - "$router_url" 3 <<'PY'
import json, sys, time, urllib.request
url, want = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 60
while True:
    try:
        with urllib.request.urlopen(url + "/workers", timeout=2) as answer:
            healthy = sum(1 for w in json.load(answer)["workers"] if w["is_healthy"])
        if healthy >= want:
            print("   %d workers healthy in the router" % healthy)
            break
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit("the router at %s does not list %d healthy workers after 60 s" % (url, want))
    time.sleep(0.2)
PY

vars=$(printf '{"sglang_server_port": %d, "router_url": "%s", "swap_serial": 1, "rollout_probe": true, "drain_timeout": 60, "swap_report_dir": "%s", "benchmark": {"levels": [1], "requests_per_level": 4, "warmup_requests": 0, "input_len": 64, "output_len": 32}}' \
       "$server_port" "$router_url" "$report_dir")
echo "== roll the fleet to EAGLE-3 one host at a time under load (playbooks/swap_to_eagle.yml)"
.venv/bin/ansible-playbook -i "$fleet/inventory.yml" playbooks/swap_to_eagle.yml -e "$vars"

echo
echo "== the traffic through the router ($report_dir/rollout_probe.md)"
cat "$report_dir/rollout_probe.md"
echo "   plot: $report_dir/rollout_probe.png"
.venv/bin/python - "$report_dir/rollout_probe.json" <<'PY'
import json, sys
probe = json.load(open(sys.argv[1]))
print("== %d requests, %d failed, %d broken streams, never fewer than %s healthy workers"
      % (probe["sent"], probe["failed"], probe["broken"], probe["healthy_floor"]))
sys.exit(0 if probe["failed"] == 0 and probe["broken"] == 0 and probe["sent"] > 0 else 1)
PY
