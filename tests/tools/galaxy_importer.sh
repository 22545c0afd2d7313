#!/usr/bin/env bash
# The built tarball through galaxy-importer, as Galaxy imports an upload (settings:
# tests/tools/galaxy-importer.cfg): fails on any warning or error in its log, not only on a
# refused import. GPUFLEET_GALAXY_BIN: the bin/ with galaxy-importer (default .venv/bin).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${GPUFLEET_GALAXY_BIN:-$repo/.venv/bin}
if ! "$bin/python" -c "import galaxy_importer" 2>/dev/null; then
  echo "galaxy_importer: $bin/python has no galaxy-importer: install requirements.txt (make setup)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$repo/.venv/bin/ansible-galaxy" collection build "$repo" --output-path "$tmp/dist" >/dev/null
tarball=$(ls "$tmp"/dist/gpufleet-serving-*.tar.gz)
mkdir -p "$tmp/ansible-tmp"
printf "ANSIBLE_LOCAL_TMP = %s\n" "$tmp/ansible-tmp" | cat "$repo/tests/tools/galaxy-importer.cfg" - > "$tmp/importer.cfg"
# The importer's ansible-lint and ansible-doc come from PATH; no setting of this checkout.
(cd "$tmp" && env -u ANSIBLE_CONFIG -u ANSIBLE_COLLECTIONS_PATH GALAXY_IMPORTER_CONFIG="$tmp/importer.cfg" \
  PATH="$bin:$PATH" "$bin/python" -m galaxy_importer.main "$tarball") > "$tmp/import.log" 2>&1 || {
  cat "$tmp/import.log" >&2; echo "galaxy_importer: the import failed" >&2; exit 1; }
if grep -E "^(WARNING|ERROR)" "$tmp/import.log" >&2; then
  echo "galaxy_importer: the import logged the warnings or errors above" >&2
  exit 1
fi
grep -q "Importer processing completed successfully" "$tmp/import.log"
echo "galaxy_importer: $(basename "$tarball") imports with no warning and no error"
