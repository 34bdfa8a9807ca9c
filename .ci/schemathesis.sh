#!/usr/bin/env bash
# Schemathesis (PyPI) with every check against a real `outpost serve` and the OpenAPI document it
# serves at /openapi.json. Requests carry a bearer token of a registered user (profile, records:read,
# records:write), so the routes behind sign-in are exercised too. Exits non-zero on any finding.
# Usage: .ci/schemathesis.sh   (OUTPOST_BINARY overrides Server/.build/debug/outpost;
#        SCHEMATHESIS_MAX_EXAMPLES, SCHEMATHESIS_SEED and SCHEMATHESIS_WORKERS tune the run)
set -euo pipefail
cd "$(dirname "$0")/.."

binary="${OUTPOST_BINARY:-$PWD/Server/.build/debug/outpost}"
[ -x "$binary" ] || { echo "schemathesis: no outpost binary at $binary (swift build --package-path Server first)"; exit 1; }
python=$(bash .ci/python-venv.sh)
schemathesis="$(dirname "$python")/schemathesis"
max_examples="${SCHEMATHESIS_MAX_EXAMPLES:-100}"
seed="${SCHEMATHESIS_SEED:-1207}"
# One worker: with two, Schemathesis 4.32 sometimes fails inside its own generator (a Hypothesis
# "inconsistent results" error that is no finding about the server).
workers="${SCHEMATHESIS_WORKERS:-1}"

source .ci/outpost-server.sh
database="$workdir/schemathesis.sqlite"

password="schemathesis-password-1"
printf '%s\n' "$password" | "$binary" users add schemathesis-user --database "$database" > /dev/null
"$binary" clients add "Schemathesis (password)" --id outpost-cli-password --grant password --grant refresh_token \
    --database "$database" > /dev/null
start_outpost_server schemathesis --demo --database "$database" --log-level warning --changes-heartbeat 1 \
    --changes-max-stream 1

token=$("$python" - "$url" "$password" <<'PY'
import json, sys, urllib.parse, urllib.request
url, password = sys.argv[1], sys.argv[2]
form = urllib.parse.urlencode({
    "grant_type": "password", "client_id": "outpost-cli-password", "username": "schemathesis-user",
    "password": password, "scope": "profile records:read records:write",
}).encode()
with urllib.request.urlopen(urllib.request.Request(url + "/oauth/token", data=form)) as reply:
    print(json.load(reply)["access_token"])
PY
)

export SCHEMATHESIS_HOOKS=schemathesis_hooks PYTHONPATH="$PWD/.ci${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
started=$SECONDS
status=0
# From the temporary folder, so Schemathesis's own cache stays out of the repository.
(cd "$workdir" && "$schemathesis" --config-file "$OLDPWD/.ci/schemathesis.toml" run "$url/openapi.json" --checks all --max-examples "$max_examples" --seed "$seed" \
    --workers "$workers" --request-timeout 30 --suppress-health-check all --generation-database none --no-color \
    -H "Authorization: Bearer $token" --report junit --report-dir "$workdir/report") || status=$?
echo "schemathesis: finished in $((SECONDS - started)) s (max-examples $max_examples, seed $seed)"

if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "schemathesis: the server died during the run"; cat "$log"; status=1
fi
# The server logs at warning: anything here (a 5xx, an unhandled error) is worth reading.
if grep -v "listening on" "$log" | grep -q .; then
    echo "schemathesis: the server's warnings and errors:"; grep -v "listening on" "$log" | head -n 20
fi
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=""
[ "$status" -eq 0 ] && echo "schemathesis: no findings" || echo "schemathesis: FAILED (findings above)"
exit "$status"
