#!/usr/bin/env bash
# Creates (or reuses) the virtualenv the interop suites use and prints its python's path.
# Usage: python=$(bash .ci/python-venv.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OUTPOST_VENV:-$PWD/.build-venv}"
req=".ci/requirements-interop.txt"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if ! cmp -s "$req" "$stamp"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    cp "$req" "$stamp"
fi
echo "$venv/bin/python"
