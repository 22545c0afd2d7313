#!/usr/bin/env bash
# The collection's documentation as the Ansible docsite builds it, with antsibull-docs:
# lint-collection-docs --plugin-docs (every plugin's and role's documentation, the links of
# docs/docsite/*.yml, the changelog), then the collection's docsite built with Sphinx
# (the guides of docs/docsite/extra-docs.yml included). Offline, references into the Ansible
# documentation (intersphinx: docs.ansible.com) cannot resolve: those warnings are allowed,
# any other fails the run. GPUFLEET_DOCS_BIN: the bin/ with antsibull-docs and sphinx-build
# (default .venv/bin).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${GPUFLEET_DOCS_BIN:-$repo/.venv/bin}
for tool in antsibull-docs sphinx-build; do
  if [[ ! -x $bin/$tool ]]; then
    echo "docs_check: $bin/$tool is missing: install requirements.txt (antsibull-docs, sphinx-ansible-theme; make setup)" >&2
    exit 1
  fi
done
export PATH="$bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$repo/build/collections"
unset ANSIBLE_CONFIG
antsibull-docs lint-collection-docs --plugin-docs "$repo/build/collections/ansible_collections/gpufleet/serving"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/site"
antsibull-docs sphinx-init --use-current --fail-on-error --dest-dir "$tmp/site" gpufleet.serving >/dev/null
mkdir -p "$tmp/site/rst"
chmod og-w "$tmp/site/rst"  # antsibull-docs wants the directory writable by itself alone
antsibull-docs --config-file "$tmp/site/antsibull-docs.cfg" collection --cleanup everything --use-current \
  --fail-on-error --dest-dir "$tmp/site/rst" gpufleet.serving >/dev/null
sphinx-build -M html "$tmp/site/rst" "$tmp/site/build" -c "$tmp/site" -q 2> "$tmp/warnings"
offline="undefined label: '(common_return_values|action_plugins|ansible_configuration_settings|ansible_collections\.ansible\.builtin\.[a-z_]+)'|failed to reach any of the inventories"
if grep "WARNING" "$tmp/warnings" | grep -vE "$offline" >&2; then
  echo "docs_check: the docsite build warned (above)" >&2
  exit 1
fi
html="$tmp/site/build/html/collections/gpufleet/serving"
test -f "$html/docsite/guides.html" || { echo "docs_check: the guides page was not built" >&2; exit 1; }
for m in "$repo"/plugins/modules/*.py; do
  test -f "$html/$(basename "$m" .py)_module.html" || { echo "docs_check: no page for $(basename "$m")" >&2; exit 1; }
done
echo "docs_check: lint-collection-docs passed; the docsite builds with every module and the guides"
