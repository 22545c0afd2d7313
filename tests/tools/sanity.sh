#!/usr/bin/env bash
# Run `ansible-test sanity` on a copy of the checkout laid out as
# ansible_collections/gpufleet/serving inside a git work tree (ansible-test's
# requirement), with the get-pip stand-in in ansible-test's cache.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work="$repo/build/sanity"
dest="$work/ansible_collections/gpufleet/serving"
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
for v in 24_2 25_2 25_3 26_0; do cp "$repo/tests/tools/get_pip_standin.py" "$cache/get_pip_$v.py"; done

rm -rf "$dest"
mkdir -p "$dest"
# Tracked and untracked-but-not-ignored files: what a commit would hold.
(cd "$repo" && git ls-files -co --exclude-standard -z) | (cd "$repo" && xargs -0 cp --parents -t "$dest")
cd "$dest"
git init -q
printf '/tests/output/\n' >> .gitignore
git add -A >/dev/null
# GPUFLEET_ANSIBLE_BIN (a venv's bin/, as tests/support/paths.py reads it) picks the
# ansible-core; its Python is the one sanity runs on, found first on PATH.
bin=${GPUFLEET_ANSIBLE_BIN:-$repo/.venv/bin}
py=${SANITY_PYTHON:-$("$bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
PATH="$bin:$PATH" "$bin/ansible-test" sanity --venv --python "$py" --color no "$@"
