#!/usr/bin/env bash
# The interop suites against a real `outpost serve`: the sign-in pages in headless Chromium
# (selenium), OAuth 2.0 / OpenID Connect conformance with Authlib, and files and live changes with
# curl, Python requests and Chromium's EventSource, and the Prometheus metrics with prometheus_client's
# parser, and the admin console's pages with axe-core's WCAG 2.2 A/AA rules. Screenshots of every page go
# to $OUTPOST_SCREENSHOTS (default .build-screenshots/).
# Usage: .ci/auth-interop.sh            (OUTPOST_BINARY overrides Server/.build/debug/outpost)
set -euo pipefail
cd "$(dirname "$0")/.."

binary="${OUTPOST_BINARY:-$PWD/Server/.build/debug/outpost}"
[ -x "$binary" ] || { echo "auth-interop: no outpost binary at $binary (swift build --package-path Server first)"; exit 1; }
export OUTPOST_BINARY="$binary"
export OUTPOST_SCREENSHOTS="${OUTPOST_SCREENSHOTS:-$PWD/.build-screenshots}"

if ! command -v chromium > /dev/null || ! command -v chromedriver > /dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver > /dev/null
fi
if ! command -v curl > /dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl > /dev/null
fi
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}"
# Selenium must use the driver above, never fetch one.
export SE_OFFLINE=true SE_AVOID_STATS=true

python=$(bash .ci/python-venv.sh)

status=0
echo "== auth interop: browser pages (headless Chromium)"
"$python" Server/Tests/Interop/auth/browser_test.py || status=1
echo "== auth interop: password reset and e-mail verification pages (headless Chromium, aiosmtpd)"
"$python" Server/Tests/Interop/auth/mail_browser_test.py || status=1
echo "== auth interop: web sign-in through django-oauth-toolkit (headless Chromium)"
"$python" Server/Tests/Interop/auth/upstream_browser_test.py || status=1
echo "== admin console: sign-in, gate and overview (headless Chromium, axe-core)"
"$python" Server/Tests/Interop/admin/overview_test.py || status=1
echo "== admin console: users (headless Chromium, axe-core)"
"$python" Server/Tests/Interop/admin/users_test.py || status=1
echo "== admin console: operations pages (headless Chromium, axe-core, requests)"
"$python" Server/Tests/Interop/admin/operations_test.py || status=1
echo "== admin console: record types, rules and records (headless Chromium, axe-core)"
"$python" Server/Tests/Interop/admin/records_test.py || status=1
echo "== auth interop: OAuth 2.0 / OIDC conformance (Authlib)"
"$python" Server/Tests/Interop/auth/authlib_test.py || status=1
echo "== files and live changes interop (curl, requests, Chromium EventSource)"
"$python" Server/Tests/Interop/live/live_test.py || status=1
echo "== metrics interop (prometheus_client's text parser)"
"$python" Server/Tests/Interop/live/metrics_test.py || status=1
[ "$status" -eq 0 ] && echo "auth interop: all suites passed" || echo "auth interop: FAILED (see above)"
exit "$status"
