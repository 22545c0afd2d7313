#!/usr/bin/env bash
# The real-GPU suite for gpu_release (tests/gpu/suite.py); exits non-zero on any failure.
#
#   tests/gpu/run_suite.sh [suite.py options]          on a host with NVIDIA GPUs, as root
#   tests/gpu/run_suite.sh --fake [suite.py options]   the same cases on the fake GPU kit
#                                                      (sim/), to try the suite itself
# Environment: PYTHON (default python3, the one with torch, psutil, nvidia-ml-py and
# setproctitle); ansible-core must be importable by it (PYTHONPATH is passed on).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
py="${PYTHON:-python3}"

# Ansible finds the collection through ansible.cfg's collections_path.
link="$repo/build/collections/ansible_collections/gpufleet/serving"
if [ ! -e "$link" ]; then
    mkdir -p "$(dirname "$link")"
    ln -sfn ../../../.. "$link"
fi

if [ "${1:-}" = "--fake" ]; then
    shift
    root="$(mktemp -d /tmp/gf-fakegpu.XXXXXX)"
    trap 'rm -rf "$root"' EXIT
    "$py" "$repo/sim/simctl" gpu init "$root" --gpus "${FAKE_GPUS:-2}" >/dev/null
    eval "$("$py" "$repo/sim/simctl" gpu env "$root")"
    export GF_BACKEND=fake
fi

export PYTHONUNBUFFERED=1 LC_ALL="${LC_ALL:-C.UTF-8}" LANG="${LANG:-C.UTF-8}"
"$py" "$here/suite.py" "$@"
