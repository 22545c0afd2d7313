#!/usr/bin/env bash
# Print the path of a Python interpreter of version X.Y (first argument) that can make
# a venv, or fail with what to install. Looked for, in order: python<X.Y> on PATH,
# pyenv's versions ($PYENV_ROOT, ~/.pyenv), /usr/local/bin, /usr/bin.
# Usage: scripts/find_python.sh 3.12
set -euo pipefail
want=${1:?usage: $0 X.Y}
[[ $want =~ ^[0-9]+\.[0-9]+$ ]] || { echo "find_python.sh: bad version '$want' (want X.Y)" >&2; exit 2; }

candidates=()
if p=$(command -v "python$want" 2>/dev/null); then candidates+=("$p"); fi
for root in "${PYENV_ROOT:-}" "$HOME/.pyenv"; do
  [[ -n $root && -d $root/versions ]] || continue
  # Newest patch release first (sort -V), only X.Y.Z builds (not X.Y-dev, not envs).
  while IFS= read -r dir; do candidates+=("$dir/bin/python$want"); done < <(
    find "$root/versions" -mindepth 1 -maxdepth 1 -name "$want.*" | grep -E "/$want\.[0-9]+$" | sort -rV)
done
candidates+=("/usr/local/bin/python$want" "/usr/bin/python$want")

for py in "${candidates[@]}"; do
  [[ -x $py ]] || continue
  # A pyenv shim exists for every version pyenv knows of; run it to see that it works,
  # and check that it is X.Y and can build a venv (Debian splits ensurepip off).
  if "$py" -c "import sys, ensurepip, venv; sys.exit(sys.version_info[:2] != tuple(map(int, '$want'.split('.'))))" \
      >/dev/null 2>&1; then
    "$py" -c "import sys; print(sys.executable)"  # the real binary, not a pyenv shim
    exit 0
  fi
done

cat >&2 <<MSG
find_python.sh: no Python $want that can make a venv was found (looked for python$want on
PATH, in pyenv's versions and in /usr/bin, /usr/local/bin). Install one, e.g.:
  pyenv install $want            # or
  apt-get install python$want python$want-venv   # where your Debian release ships it
or name one on make's command line: make setup PY=/path/to/python3.11 PY_NEWEST=/path/to/python3.12
MSG
exit 1
