#!/usr/bin/env bash
# The collection builds with ansible-galaxy, installs, and its modules and
# playbooks resolve from the installed copy (not from this checkout).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$repo/.venv/bin/ansible-galaxy" collection build "$repo" --output-path "$tmp/dist" >/dev/null
tarball=$(ls "$tmp"/dist/gpufleet-serving-*.tar.gz)
# --force: a copy installed elsewhere (~/.ansible/collections) must not make this a no-op.
"$repo/.venv/bin/ansible-galaxy" collection install --force "$tarball" -p "$tmp/coll" >/dev/null 2>&1
installed="$tmp/coll/ansible_collections/gpufleet/serving"
test -f "$installed/plugins/modules/gpu_release.py"
test -f "$installed/MANIFEST.json"
if tar -tzf "$tarball" | grep -E '(^|/)(\.venv[^/]*|\.ansible|build|tests/output)/' >/dev/null; then
  echo "the tarball holds build or venv files" >&2; exit 1
fi
# Left out (galaxy.yml build_ignore): the developers' tools. Kept: the licence, the execution
# environment's files, the pins the simulated fleet reads, the kit and the example users copy.
if tar -tzf "$tarball" | grep -E '^(Makefile|\.pylintrc|ruff\.toml|bench/|scripts/|molecule/|\.ci/)' >&2; then
  echo "the tarball holds the developers' tools above" >&2; exit 1
fi
for kept in COPYING meta/execution-environment.yml meta/ee-requirements.txt meta/ee-bindep.txt \
    requirements-common.txt requirements-sglang.txt requirements-sglang-deps.txt sim/simctl \
    docs/examples/my_role/molecule/default/create.yml docs/docsite/extra-docs.yml CHANGELOG.rst; do
  test -f "$installed/$kept" || { echo "the tarball lacks $kept" >&2; exit 1; }
done
printf "[defaults]\ncollections_path = %s\n" "$tmp/coll" > "$tmp/ansible.cfg"
export ANSIBLE_CONFIG="$tmp/ansible.cfg"
# Every module's and role's documentation parses and resolves from the installed copy.
for path in "$installed"/plugins/modules/*.py; do
  m=$(basename "$path" .py)
  "$repo/.venv/bin/ansible-doc" -t module "gpufleet.serving.$m" | grep -q "$tmp/coll" \
    || { echo "ansible-doc could not show gpufleet.serving.$m from the installed copy" >&2; exit 1; }
done
for path in "$installed"/roles/*/; do
  r=$(basename "$path")
  "$repo/.venv/bin/ansible-doc" -t role "gpufleet.serving.$r" | grep -q "ENTRY POINT" \
    || { echo "ansible-doc could not show the role gpufleet.serving.$r" >&2; exit 1; }
done
# Playbooks run by their collection names after install.
for path in "$installed"/playbooks/*.yml; do
  pb=$(basename "$path" .yml)
  "$repo/.venv/bin/ansible-playbook" --syntax-check -i localhost, "gpufleet.serving.$pb" >/dev/null \
    || { echo "ansible-playbook gpufleet.serving.$pb does not resolve or parse" >&2; exit 1; }
done
echo "built $(basename "$tarball"), installed; docs of every module and role resolve from $installed"
