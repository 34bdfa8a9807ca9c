#!/usr/bin/env bash
# Every test of both packages: the client package at the repository root, then the server package in
# Server/ (its unit tests and the live-server integration tests). Arguments go to both `swift test`s,
# e.g. `bash test.sh --filter RecordsProtocolTests`.
set -euo pipefail
cd "$(dirname "$0")"
swift test "$@"
swift test --package-path Server "$@"
