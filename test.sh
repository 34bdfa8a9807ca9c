#!/usr/bin/env bash
# Every test: the client modules' unit tests, the server's unit tests, the CLI's, the documentation
# checks and the live-server integration tests. They are all targets of the package in Server/, so
# that the dependency stack and the client modules compile once (the demo's build is reused).
# Arguments go to `swift test`, e.g. `bash test.sh --filter RecordsProtocolTests`.
set -euo pipefail
cd "$(dirname "$0")"
swift test --package-path Server "$@"
