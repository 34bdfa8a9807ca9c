#!/usr/bin/env bash
# An app that adds the client package (by path, as it would by URL) must resolve no server package:
# builds a throwaway app package depending on `Outpost`, resolves it, prints the package graph, and
# fails if the graph holds a package that only the server, the CLI or the docs use.
# Usage: .ci/client-graph.sh            (prints the graph the README lists)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
app=$(mktemp -d)
trap 'rm -rf "$app"' EXIT
mkdir -p "$app/Sources/App"
printf 'import Outpost\n\nprint(OutpostClient.self)\n' > "$app/Sources/App/main.swift"
cat > "$app/Package.swift" <<MANIFEST
// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "App",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "Outpost", path: "$repo")],
    targets: [.executableTarget(name: "App", dependencies: [.product(name: "Outpost", package: "Outpost")])]
)
MANIFEST
swift package --package-path "$app" resolve > /dev/null
swift package --package-path "$app" show-dependencies --format json > "$app/graph.json"
python3 - "$app/graph.json" <<'CHECK'
import json
import sys

# Packages only the server, the CLI or the docs use. (AsyncHTTPClient, the client's transport off
# Apple platforms, brings swift-nio-ssl, swift-certificates and swift-service-lifecycle itself.)
server_only = {
    "hummingbird", "hummingbird-auth", "postgres-nio", "sqlite-nio", "swift-argument-parser",
    "swift-docc-plugin", "swift-openapi-generator", "swift-nio-postgres", "sqlite-kit", "postgres-kit",
}
graph = json.load(open(sys.argv[1]))
found = set()

def walk(node, depth, seen):
    for dependency in node.get("dependencies", []):
        identity = dependency["identity"]
        repeat = identity in seen
        print("  " * depth + f"{identity} {dependency.get('version', '')}" + (" (above)" if repeat else ""))
        found.add(identity)
        seen.add(identity)
        if not repeat:
            walk(dependency, depth + 1, seen)

print("The graph of an app that adds the client package:")
walk(graph, 0, set())
leaked = sorted(found & server_only)
if leaked:
    sys.exit("client-graph: an app resolves server-only packages: " + ", ".join(leaked)
             + ". Move the dependency to Server/Package.swift, or behind a product the app opts into.")
print(f"client-graph: {len(found)} packages, none of them server-only")
CHECK
