#!/usr/bin/env bash
# Everything CI runs besides Swift, installed in one go: Debian's packages (time zones for the demo
# plugin, PostgreSQL, Chromium and its driver, curl, nginx, wrk) and the interop suites' virtualenv
# (.ci/requirements-interop.txt). `.ci/run` starts it in the background while the build compiles;
# each script that needs one of these still installs it on its own when it is missing.
# Usage: bash .ci/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(tzdata postgresql chromium chromium-driver curl nginx wrk)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2> /dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "install: Debian packages ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
fi
echo "install: virtualenv $(bash .ci/python-venv.sh)"
