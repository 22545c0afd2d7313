#!/usr/bin/env bash
# The worked example of docs/testing-your-role.md, run the way a user runs it: build the
# collection tarball, install it into a temporary directory outside this checkout, copy the
# example it ships (docs/examples/my_role) into another, and run `molecule test` there
# with ANSIBLE_COLLECTIONS_PATH naming only the installed copy. Fails when the example does.
#
#   bash tests/tools/example_from_tarball.sh [SCENARIO...]   (default: every scenario)
#
# GPUFLEET_ANSIBLE_BIN: the bin/ of the Python environment with ansible-core, molecule,
# nvidia-ml-py and psutil (default .venv/bin): the user's pip install, not the collection.
# GPUFLEET_EXAMPLE_DIR: the example project to copy (default docs/examples/my_role as the
# tarball ships it, the copy docs/testing-your-role.md tells users to start from).
# GPUFLEET_EXAMPLE_BREAK=1: break the copy (the role serves another model name than its
# verify.yml expects), to see this script fail (docs/testing-your-role.md, "Is the CI check real?").
# Needs root (the simulated fleet runs in PID and mount namespaces).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${GPUFLEET_ANSIBLE_BIN:-$repo/.venv/bin}
example=${GPUFLEET_EXAMPLE_DIR:-}  # default: docs/examples/my_role of the installed copy
say() { echo "example_from_tarball: $*"; }

tmp=$(mktemp -d /tmp/gpufleet-example.XXXXXX)
project="$tmp/my_role"
finished=false
cleanup() {
  if ! $finished && [[ -d "$project/molecule" ]]; then
    # Interrupted before Molecule's own final destroy: take the fleets down.
    (cd "$project" && "$bin/molecule" destroy --all >/dev/null 2>&1) || true
  fi
  # The fleets live in Molecule's ephemeral directories (~/.ansible/tmp/...), named in the log.
  local left
  left=$(grep -aoE "inventory=/[^ ]*/fleet/inventory.yml" "$tmp/molecule.log" 2>/dev/null \
    | sed 's/^inventory=//; s/inventory.yml$/fleet.json/' | sort -u \
    | while read -r meta; do if [[ -e $meta ]]; then dirname "$meta"; fi; done || true)
  if [[ -n "$left" ]]; then
    say "a simulated fleet is still up in $left; take it down with:" \
      "cd $project && ANSIBLE_COLLECTIONS_PATH=$tmp/collections molecule destroy --all" >&2
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

# The user's environment: their Python tools, no ansible setting of this checkout.
unset ANSIBLE_CONFIG ANSIBLE_ROLES_PATH ANSIBLE_COLLECTIONS_PATHS ANSIBLE_INVENTORY \
  MOLECULE_EPHEMERAL_DIRECTORY MOLECULE_PROJECT_DIRECTORY VIRTUAL_ENV
export PATH="$bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$tmp/collections"

# 1. Build and install, as docs/testing-your-role.md says.
"$bin/ansible-galaxy" collection build "$repo" --output-path "$tmp/dist" >/dev/null
tarball=$(ls "$tmp"/dist/gpufleet-serving-*.tar.gz)
(cd "$tmp" && "$bin/ansible-galaxy" collection install --force "$tarball" -p "$tmp/collections" >/dev/null)
installed="$tmp/collections/ansible_collections/gpufleet/serving"
test -f "$installed/MANIFEST.json"

# 2. Prove that the installed copy is the only gpufleet.serving Ansible can see: the one
# collection path, nothing from sys.path or site-packages, and no copy under ~/.ansible used.
example=${example:-$installed/docs/examples/my_role}
cp -r "$example" "$project"
rm -rf "$project/.ansible"
cd "$project"
seen=$("$bin/ansible-galaxy" collection list gpufleet.serving --format json 2>/dev/null \
  | "$bin/python" -c 'import json, sys; print("\n".join(sorted(json.load(sys.stdin))))')
if [[ "$seen" != "$tmp/collections/ansible_collections" ]]; then
  say "gpufleet.serving is seen elsewhere than the installed copy: $seen" >&2; exit 1
fi
"$bin/python" - <<'EOF'
import os, sys
for path in sys.path:
    if os.path.isdir(os.path.join(path, "ansible_collections", "gpufleet")):
        sys.exit("example_from_tarball: a gpufleet collection on sys.path: %s" % path)
EOF

if [[ ${GPUFLEET_EXAMPLE_BREAK:-} == 1 ]]; then
  sed -i 's/^my_serving_served_model_name: .*/my_serving_served_model_name: another-model/' \
    roles/my_serving/defaults/main.yml
  say "broke the copy on purpose (GPUFLEET_EXAMPLE_BREAK=1): this run must fail"
fi

# 3. molecule test, every scenario or the ones named.
args=(--all)
if (($#)); then args=(); for s in "$@"; do args+=(--scenario-name "$s"); done; fi
set +e
# COLUMNS: Molecule wraps long lines at the terminal's width; step 4 reads whole paths.
COLUMNS=1000 "$bin/molecule" test "${args[@]}" 2>&1 | tee "$tmp/molecule.log"
rc=${PIPESTATUS[0]}
set -e
finished=true
if ((rc != 0)); then
  say "molecule test failed (exit $rc) in a copy of $example" >&2; exit "$rc"
fi

# 4. The roles ran from the installed copy (Ansible prints the path of each task file it
# includes: "included: PATH for HOST"), and nothing of the checkout was used: no path under it
# in the output or the project's files, but the Python environment's (GPUFLEET_ANSIBLE_BIN's).
venv=$(cd "$bin/.." && pwd)
"$bin/python" - "$repo" "$venv" "$installed" "$tmp/molecule.log" "$project" <<'EOF2'
import os, re, sys
repo, venv, installed, log, project = sys.argv[1:]
ansi = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\]8;[^\x1b]*\x1b\\")
with open(log, encoding="utf-8", errors="replace") as handle:
    output = ansi.sub("", handle.read())
# sglang_server maps its variables onto the internal server role, whose task files it includes.
used = os.path.join(installed, "roles", "_server", "tasks") + "/"
if "included: " + used not in output:
    sys.exit("example_from_tarball: no task file of %s was included: which server role ran?" % used)
paths = re.compile(re.escape(repo + "/") + r"[^\s'\",;:]*")
texts = [output]
for top, unused, names in os.walk(project):
    for name in names:
        with open(os.path.join(top, name), encoding="utf-8", errors="replace") as handle:
            texts.append(handle.read())
leaks = {p for text in texts for p in paths.findall(text) if not p.startswith(venv + "/")}
if leaks:
    sys.exit("example_from_tarball: the run used files of the checkout: %s" % ", ".join(sorted(leaks)))
EOF2
say "passed: molecule test ${args[*]} of a copy of ${example#"$tmp"/} against $(basename "$tarball") installed in $tmp/collections only"
