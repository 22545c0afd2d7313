#!/usr/bin/env bash
# The Debian packages the simulated fleet and the build need (make setup runs this):
#   openssh-server, openssh-client  sshd and ssh for each simulated host
#   tini                            each host's namespace init
#   psmisc                          fuser;  util-linux: unshare and nsenter
#   gcc, make                       the fake NVML library (sim/fakenvml)
#   git                             ansible-test sanity wants a git work tree
#   python3-venv                    `python3 -m venv` with Debian's own Python
#   chromium                        the tests open the HTML report in headless Chromium
# Installed packages: nothing to do. Missing ones: installed with apt-get when run as
# root; otherwise the exact command to run is printed and the script fails.
# GPUFLEET_SYSTEM_PACKAGES=skip skips the whole check (the fleet tests then skip
# themselves where sshd or tini is missing).
set -euo pipefail

PACKAGES=(openssh-server openssh-client tini psmisc util-linux gcc make git python3-venv chromium)
# Where dpkg is not there (not Debian): the commands those packages bring.
COMMANDS=(/usr/sbin/sshd ssh tini fuser unshare nsenter gcc make git chromium)

if [[ ${GPUFLEET_SYSTEM_PACKAGES:-} == skip ]]; then
  echo "system packages: not checked (GPUFLEET_SYSTEM_PACKAGES=skip)"
  exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  absent=()
  for c in "${COMMANDS[@]}"; do
    if [[ $c == /* ]]; then [[ -x $c ]] || absent+=("$c"); else command -v "$c" >/dev/null 2>&1 || absent+=("$c"); fi
  done
  if ((${#absent[@]})); then
    echo "system packages: not a Debian system (no dpkg-query), and these commands are missing:" \
         "${absent[*]}. Install them with your system's package manager" \
         "(Debian names: ${PACKAGES[*]})." >&2
    exit 1
  fi
  echo "system packages: not a Debian system; every command needed is there"
  exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "system packages: all installed (${PACKAGES[*]})"
  exit 0
fi

if [[ $(id -u) != 0 ]]; then
  echo "system packages: missing ${missing[*]}. Install them as root, then run make setup again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "system packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
