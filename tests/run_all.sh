#!/usr/bin/env bash
# Every quality gate, in order; any failure fails the run (make test calls this).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$PWD/ansible.cfg"
failed=()

stage() {
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name: $*"
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - t0)) s)"
  else
    echo "=== $name: FAILED ($((SECONDS - t0)) s)"
    failed+=("$name")
  fi
}

stage changelog antsibull-changelog lint
stage galaxy-build bash tests/tools/galaxy_build_install.sh
stage ansible-lint ansible-lint --profile production --offline
stage sanity bash tests/tools/sanity.sh
if compgen -G "molecule/*/molecule.yml" >/dev/null; then
  stage molecule molecule test --all
fi
# pytest last, so that its summary is the run's closing line.
stage pytest python -m pytest -p no:cacheprovider tests/unit tests/integration tests/sim

if ((${#failed[@]})); then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed"
