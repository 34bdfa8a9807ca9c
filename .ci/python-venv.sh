#!/usr/bin/env bash
# Creates (or reuses) the virtualenv the interop suites use and prints its python's path.
# Usage: python=$(bash .ci/python-venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OUTPOST_VENV:-$PWD/.build-venv}"
req=".ci/requirements-interop.txt"
nodeps=".ci/requirements-interop-nodeps.txt"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if ! cat "$req" "$nodeps" | cmp -s - "$stamp"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$nodeps" >&2
    cat "$req" "$nodeps" > "$stamp"
fi
echo "$venv/bin/python"
