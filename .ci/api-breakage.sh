#!/usr/bin/env bash
# The public API of each client product with API of its own, compared with the baseline committed in
# .ci/api-baseline/<Module>.json (swift-api-digester's dump of that module). It reads the modules of
# the debug build of Server/ (which compiles every client module), so it compiles nothing itself.
# SPI (`@_spi(OutpostInternal)`, for the server package) is not compared. A break the change means to
# make goes into .ci/api-breakage-allowlist.txt, one message a line as printed here; at a release the
# baseline is written anew (--update) and the allowlist emptied.
# Usage: bash .ci/api-breakage.sh            (after swift build --package-path Server)
#        bash .ci/api-breakage.sh --update   (writes the baseline from the current build)
set -euo pipefail
cd "$(dirname "$0")/.."

modules=(OutpostCore OutpostAuth OutpostCallbacks OutpostPlugins OutpostTesting OutpostExpressions OutpostOpenAPI OutpostSync)
baseline=.ci/api-baseline
allowlist=.ci/api-breakage-allowlist.txt
update=0
[ "${1:-}" = "--update" ] && update=1
description=Server/.build/debug.yaml
[ -f "$description" ] || { echo "api-breakage: no $description; run swift build --package-path Server first"; exit 1; }

# The import paths, clang module maps and target triple the module was compiled with, from SwiftPM's
# build description: the digester loads the module and everything it imports as the compiler did.
module_flags() {
    python3 - "$description" "$1" <<'FLAGS'
import json
import sys

description, module = sys.argv[1], sys.argv[2]
for line in open(description):
    line = line.strip()
    if line.startswith("args: [") and f'"-module-name","{module}"' in line:
        args = json.loads(line[len("args: "):])
        flags = []
        for index, arg in enumerate(args[:-1]):
            if arg in ("-Xcc", "-I", "-target"):
                flags += [arg, args[index + 1]]
        print("\n".join(flags))
        sys.exit(0)
sys.exit(f"api-breakage: {module} is not in {description}; build Server first")
FLAGS
}

status=0
for module in "${modules[@]}"; do
    mapfile -t flags < <(module_flags "$module")
    [ "${#flags[@]}" -gt 0 ] || exit 1
    if [ "$update" = 1 ]; then
        mkdir -p "$baseline"
        swift-api-digester -dump-sdk -module "$module" -o "$baseline/$module.json" "${flags[@]}" \
            -avoid-location -avoid-tool-args -abort-on-module-fail -ignore-spi-group OutpostInternal
        echo "api-breakage: wrote $baseline/$module.json"
    elif [ ! -f "$baseline/$module.json" ]; then
        echo "api-breakage: $module has no baseline; write one with: bash .ci/api-breakage.sh --update"
        status=1
    elif swift-api-digester -diagnose-sdk -baseline-path "$baseline/$module.json" -module "$module" "${flags[@]}" \
        -abort-on-module-fail -ignore-spi-group OutpostInternal -compiler-style-diags -breakage-allowlist-path "$allowlist"; then
        echo "api-breakage: $module: no breaking change"
    else
        echo "api-breakage: $module breaks its API (above). If that is meant, add each message to $allowlist"
        echo "and say it in the CHANGELOG under Removed or Changed."
        status=1
    fi
done
exit "$status"
