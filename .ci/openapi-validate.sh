#!/usr/bin/env bash
# Strict validation of the OpenAPI document a real `outpost serve` serves at /openapi.json, with
# openapi-spec-validator (PyPI) against the OpenAPI 3.1 schema: every error is printed and any one
# fails the run (Python warnings count as errors too). Also checks what the schema leaves open but
# clients generated from the document (Apple's swift-openapi-generator) need: an operationId on
# every operation, each unique.
# Usage: .ci/openapi-validate.sh   (OUTPOST_BINARY overrides Server/.build/debug/outpost)
set -euo pipefail
cd "$(dirname "$0")/.."

binary="${OUTPOST_BINARY:-$PWD/Server/.build/debug/outpost}"
[ -x "$binary" ] || { echo "openapi-validate: no outpost binary at $binary (swift build --package-path Server first)"; exit 1; }
python=$(bash .ci/python-venv.sh)

source .ci/outpost-server.sh
start_outpost_server openapi-validate --database "$workdir/openapi.sqlite" --log-level warning

status=0
PYTHONDONTWRITEBYTECODE=1 "$python" -W error - "$url/openapi.json" <<'PY' || status=$?
import json
import sys
import urllib.request

from openapi_spec_validator import OpenAPIV31SpecValidator

url = sys.argv[1]
with urllib.request.urlopen(url) as reply:
    if reply.status != 200:
        sys.exit(f"openapi-validate: GET {url} answered {reply.status}")
    document = json.load(reply)

problems = []
if not str(document.get("openapi", "")).startswith("3.1."):
    problems.append(f"openapi is {document.get('openapi')!r}, not 3.1.x")
for error in OpenAPIV31SpecValidator(document).iter_errors():
    where = "/".join(str(part) for part in error.absolute_path)
    problems.append(f"at {where or '(root)'}: {error.message.splitlines()[0]}")

methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
seen = {}
for path, item in document.get("paths", {}).items():
    for method, operation in item.items():
        if method not in methods:
            continue
        name = operation.get("operationId")
        if not name:
            problems.append(f"{method.upper()} {path} has no operationId")
        elif name in seen:
            problems.append(f"{method.upper()} {path} repeats operationId {name!r} of {seen[name]}")
        else:
            seen[name] = f"{method.upper()} {path}"

for problem in problems:
    print(f"openapi-validate: {problem}")
if problems:
    sys.exit(f"openapi-validate: FAILED, {len(problems)} problem(s) in {url}")
print(f"openapi-validate: {url} is valid OpenAPI {document['openapi']} ({len(seen)} operations)")
PY

kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=""
exit "$status"
