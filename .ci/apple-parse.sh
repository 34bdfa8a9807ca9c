#!/usr/bin/env bash
# Parses the Swift that only Apple builds compile (nothing compiles for Darwin here): the example
# app's SwiftUI sources and the client's SwiftUI code, so that a syntax error fails CI. Type
# checking them is left to an Apple build; their shared model (Examples/NotesApp/NotesModel) is
# built and tested by the Server/ package.
set -euo pipefail
cd "$(dirname "$0")/.."
files=(Examples/NotesApp/Package.swift Examples/NotesApp/NotesApp/*.swift)
while IFS= read -r file; do files+=("$file"); done < <(grep -rl --include='*.swift' 'canImport(SwiftUI)' Sources)
swiftc -parse "${files[@]}"
echo "apple-parse: ok (${#files[@]} files)"
