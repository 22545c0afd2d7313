# shellcheck shell=bash
# Sourced by demo.sh and demo_engines.sh: the checkout set up, a simulated 2-host x 8-GPU
# fleet in a temporary directory, and the fleet taken down and the directory removed on exit
# (also on failure or Ctrl-C), so a demo leaves nothing running.
#
#   demo_start NAME            root check, make setup when needed, $work and $fleet, the trap
#   demo_fleet_up PORT WHAT [HOSTS]  the fleet up (HOSTS hosts, default 2, sshd on 127.0.0.2...:PORT),
#                              WHAT for the banner
#
# Sets repo (and cd's there), work and fleet.
repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"

demo_start() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "$1 needs root: the simulated hosts are PID and mount namespaces (run: sudo scripts/$1)" >&2
        exit 2
    fi
    if [ ! -x .venv/bin/ansible-playbook ] || [ ! -e build/fakenvml/libnvidia-ml.so.1 ] \
       || [ ! -e build/collections/ansible_collections/gpufleet/serving ]; then
        echo "== make setup"
        make setup
    fi
    work=$(mktemp -d "${TMPDIR:-/tmp}/gpufleet-${1%.sh}.XXXXXX")
    fleet="$work/fleet"
    trap demo_cleanup EXIT
    trap 'exit 130' INT TERM
}

demo_cleanup() {
    rc=$?
    if [ -e "$fleet/fleet.json" ] || [ -d "$fleet/hosts" ]; then
        echo "== bringing the simulated fleet down"
        .venv/bin/python sim/simctl fleet down "$fleet" || rc=1
    fi
    rm -rf "$work"
    exit $rc
}

demo_fleet_up() {
    echo "== simulated fleet: ${3:-2} hosts x 8 GPUs (sshd on 127.0.0.2...:$1, $2)"
    .venv/bin/python sim/simctl fleet up "$fleet" --hosts "${3:-2}" --gpus 8 --port "$1"
    .venv/bin/python sim/simctl fleet status "$fleet"
}
