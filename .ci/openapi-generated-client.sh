#!/usr/bin/env bash
# Builds Examples/GeneratedClient, a client that Apple's swift-openapi-generator generates at build
# time from the document a real `outpost serve --demo` serves, and runs its check against that
# server: sign-in and token refreshes through Outpost's AuthMiddleware (OutpostOpenAPI), records,
# a page-number list, a lambda, the error envelope of a 404. It is built as the target
# `generated-client-check` of the Server/ package (OUTPOST_GENERATED_CLIENT=1 adds it there), so the
# client modules and their dependencies are the ones that package's build already compiled.
#
# The package's copy of the document (Sources/generated-client-check/openapi.json, committed so that
# the package builds on its own) must equal the served one: a difference fails the run and prints
# the way to refresh the copy (`--refresh` writes the served document there and goes on).
# Usage: .ci/openapi-generated-client.sh [--refresh]   (OUTPOST_BINARY overrides Server/.build/debug/outpost)
set -euo pipefail
cd "$(dirname "$0")/.."

binary="${OUTPOST_BINARY:-$PWD/Server/.build/debug/outpost}"
[ -x "$binary" ] || { echo "openapi-generated-client: no outpost binary at $binary (swift build --package-path Server first)"; exit 1; }
refresh=0
[ "${1:-}" = "--refresh" ] && refresh=1
package=Examples/GeneratedClient
committed="$package/Sources/generated-client-check/openapi.json"

source .ci/outpost-server.sh
database="$workdir/generated-client.sqlite"
username=generated-client-user
password=generated-client-password-1
printf '%s\n' "$password" | "$binary" users add "$username" --database "$database" > /dev/null
# The password grant is opt-in per client (RFC 9700 §2.4), as for `outpost login --password`.
"$binary" clients add "Generated client check" --id generated-client-check --grant password --grant refresh_token \
    --database "$database" > /dev/null
start_outpost_server openapi-generated-client --demo --database "$database" --log-level warning

curl -fsS "$url/openapi.json" -o "$workdir/openapi.json"
if ! cmp -s "$workdir/openapi.json" "$committed"; then
    if [ "$refresh" = 1 ]; then
        cp "$workdir/openapi.json" "$committed"
        echo "openapi-generated-client: wrote the served document to $committed"
    else
        diff -u "$committed" "$workdir/openapi.json" | head -n 40 || true
        echo "openapi-generated-client: the served /openapi.json differs from $committed (diff above)."
        echo "Refresh the copy with: bash .ci/openapi-generated-client.sh --refresh, then commit $committed"
        exit 1
    fi
fi

echo "openapi-generated-client: building generated-client-check (swift-openapi-generator runs in the build)"
build_started=$SECONDS
OUTPOST_GENERATED_CLIENT=1 swift build --package-path Server --product generated-client-check \
    --explicit-target-dependency-import-check error
echo "openapi-generated-client: built in $((SECONDS - build_started)) s"

OUTPOST_USERNAME="$username" OUTPOST_PASSWORD="$password" OUTPOST_CLIENT_ID=generated-client-check \
    Server/.build/debug/generated-client-check "$url"

kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=""
