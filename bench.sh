#!/usr/bin/env bash
# The benchmark as docs/BENCHMARKS.md records it: a release build of outpost-bench (the only release
# build; about 15 minutes from cold on 2 cores) and a run of it. Arguments go to outpost-bench, e.g.
# `bash bench.sh --quick --only storage` or `bash bench.sh --json`; `--help` lists them. wrk (Debian)
# loads the server routes from outside the server's process and is installed when missing.
# CI does not run this: it checks that a debug build of the benchmark runs (`--quick`, no figures kept).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v wrk > /dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk > /dev/null
fi
swift build --package-path Server -c release --product outpost-bench
Server/.build/release/outpost-bench "$@"
