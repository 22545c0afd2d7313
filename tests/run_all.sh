#!/usr/bin/env bash
# Every quality gate, in order; any failure fails the run (make test calls this).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$PWD/ansible.cfg"
# The checks against the real SGLang and vLLM sources fail here instead of skipping when the
# sources are missing (make test unpacks them: make setup, make setup-vllm).
export GPUFLEET_REQUIRE_REAL_SOURCES=1
# The HTML report is opened in headless Chromium (tests/support/chromium.py): required here, never skipped.
export GPUFLEET_REQUIRE_CHROMIUM=1
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
stage ruff ruff check plugins tests bench scripts sim
stage galaxy-build bash tests/tools/galaxy_build_install.sh
stage galaxy-importer bash tests/tools/galaxy_importer.sh  # Galaxy's own import checks: no warning, no error
stage docs bash tests/tools/docs_check.sh  # antsibull-docs lint-collection-docs and the docsite build
stage ansible-lint ansible-lint --profile production --offline
stage sanity bash tests/tools/sanity.sh
if compgen -G "molecule/*/molecule.yml" >/dev/null; then
  stage molecule molecule test --all
fi
stage example-from-tarball bash tests/tools/example_from_tarball.sh  # docs/testing-your-role.md's example, installed tarball

# The same gates on the NEWEST supported ansible-core (.venv-newest, requirements-newest.txt):
# sanity, one molecule scenario (EAGLE-3: both roles, their argument specs, idempotence)
# and the fleet playbooks. Only the controller's ansible tools change: python stays .venv's,
# so the simulator and the simulated hosts are the same as above.
newest_bin="$PWD/build/ansible-newest/bin"  # the newest venv's ansible* tools, no python
rm -rf "$newest_bin" && mkdir -p "$newest_bin"
ln -s "$PWD"/.venv-newest/bin/ansible* "$newest_bin/"
stage sanity-newest env GPUFLEET_ANSIBLE_BIN="$PWD/.venv-newest/bin" bash tests/tools/sanity.sh
if [[ -d molecule/eagle ]]; then
  stage molecule-newest env PATH="$newest_bin:$PATH" .venv-newest/bin/molecule test -s eagle
fi
# The SGLang half of the fleet playbooks (the vLLM half's playbooks and roles are the same files).
stage playbooks-newest env GPUFLEET_ANSIBLE_BIN="$PWD/.venv-newest/bin" \
  python -m pytest -p no:cacheprovider tests/integration/test_playbooks.py -k "not vllm" tests/tools/test_ansible_versions.py

# pytest last, so that its summary is the run's closing line.
stage pytest python -m pytest -p no:cacheprovider tests/unit tests/integration tests/sim tests/tools

if ((${#failed[@]})); then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed"
