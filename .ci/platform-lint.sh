#!/usr/bin/env bash
# Platform lint: the Apple-platform mistakes that can be found on Linux, without an Apple build.
#
#   bash .ci/platform-lint.sh              # check Sources/ (the client) and Server/Sources/
#   bash .ci/platform-lint.sh --self-test  # check the checker on samples
#
# Rules (see DESIGN.md, "Apple platforms"):
# 1. `#if canImport(X)` only for C libraries and Foundation's split: Glibc, Musl, Darwin,
#    FoundationNetworking, WinSDK; and SwiftUI, whose code is meant for wherever SwiftUI is (every
#    Apple platform, no package builds one). `canImport` of any other module is true whenever that module is
#    in the build folder (e.g. AsyncHTTPClient built for the server on a Mac, AppKit on Mac
#    Catalyst), so it picks the wrong platform: use `#if os(...)`.
# 2. In the client modules (every folder of the root package's Sources/; not Server/Sources/),
#    platform-only APIs must sit inside a matching `#if os(...)` branch (an `#else` never counts):
#    homeDirectoryForCurrentUser and Process( (macOS and Linux), NSWorkspace (macOS only, not
#    Mac Catalyst), UIApplication (iOS, tvOS, visionOS); NWPathMonitor and the web authentication
#    session's presentation-context errors (every Apple platform but watchOS: `#if !os(watchOS)`
#    counts).
# 3. In the client modules, a file size (`st_size`, 64-bit) becomes an `Int` with `Int(exactly:)`:
#    `Int(...st_size)` traps on a file of 2 GiB or more where `Int` is 32 bits (watchOS, arm64_32).
# 4. In the client modules, `UIApplication.shared` (and so `UIApplication.shared.open(...)`) is used
#    only inside a declaration marked `@available(iOSApplicationExtension, unavailable)` (itself, or
#    a type or extension around it): it is unavailable in app extensions, and Xcode builds a
#    package's modules for an app and its extensions alike. The compiler then requires the same
#    mark on every caller.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os
import re
import sys

ALLOWED_CAN_IMPORT = {"Glibc", "Musl", "Darwin", "FoundationNetworking", "WinSDK", "SwiftUI"}
# Folders of modules never built for iOS, tvOS, watchOS or visionOS: the server package.
NOT_CLIENT_ROOTS = {os.path.join("Server", "Sources")}
# Findings reported, not failed: none.
PENDING = set()
APPLE_ONLY = {"iOS", "tvOS", "watchOS", "visionOS"}
DESKTOPS = {"macOS", "Linux", "Windows", "FreeBSD", "OpenBSD", "Android"}
# Every Apple platform but watchOS; a branch under `!os(watchOS)` counts as well.
NOT_WATCH = {"macOS", "iOS", "tvOS", "visionOS"}

# API pattern, the os() names a matching branch may name (at least one, and no other), advice.
RULES = [
    (re.compile(r"\bhomeDirectoryForCurrentUser\b"), DESKTOPS,
     "homeDirectoryForCurrentUser exists on macOS and Linux only (not iOS, tvOS, watchOS, visionOS): "
     "use ConfigurationFolder, or put it under #if os(macOS) || os(Linux)"),
    (re.compile(r"\bNSWorkspace\b"), {"macOS"},
     "NSWorkspace is macOS only (not Mac Catalyst, where canImport(AppKit) is true): put it under #if os(macOS)"),
    (re.compile(r"\bProcess\s*\("), DESKTOPS,
     "Process exists on macOS and Linux only (not iOS, tvOS, watchOS, visionOS): "
     "put it under #if os(macOS) || os(Linux)"),
    (re.compile(r"\bUIApplication\b"), {"iOS", "tvOS", "visionOS"},
     "UIApplication is for iOS, tvOS and visionOS (not watchOS or macOS; unavailable in app extensions): "
     "put it under #if os(iOS) || os(tvOS) || os(visionOS)"),
    (re.compile(r"\bNWPathMonitor\b"), NOT_WATCH,
     "NWPathMonitor reports no path to most watchOS apps: put it under #if !os(watchOS) (or name the other platforms)"),
    (re.compile(r"\bpresentationContext(NotProvided|Invalid)\b"), NOT_WATCH,
     "ASWebAuthenticationSessionError has no presentation-context codes on watchOS: put them under #if !os(watchOS)"),
    (re.compile(r"\bInt\(\s*[\w.]*st_size\s*\)"), set(),
     "Int(st_size) traps on a file of 2 GiB or more where Int is 32 bits (watchOS): use Int(exactly:) and refuse what does not fit"),
]

# Rule 4: the shared application object, and the mark a declaration that uses it needs.
# The shared application object, and the types built on it that are marked unavailable there.
SHARED_APPLICATION = re.compile(r"\bUIApplication\s*\.\s*shared\b|\bSystem(?:Browser|URLOpener)\s*\(")
EXTENSION_UNAVAILABLE = re.compile(r"@available\(\s*iOSApplicationExtension\s*,\s*unavailable\s*[,)]")
DECLARATION = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|open|static|class|final|"
    r"nonisolated|override|convenience|mutating|required|lazy|dynamic|indirect|weak|unowned)\s+)*"
    r"(?:func|init|deinit|var|let|struct|class|enum|actor|extension|protocol|subscript)\b"
)
EXTENSION_ADVICE = (
    "UIApplication.shared (and SystemBrowser, SystemURLOpener, built on it) is unavailable in app extensions: "
    "mark the declaration that uses it (and each caller) "
    "@available(iOSApplicationExtension, unavailable)"
)
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
COMMENT = re.compile(r"(?<![:\"])//.*$")
POSITIVE_OS = re.compile(r"(?<!!)\bos\((\w+)\)")
CATALYST = re.compile(r"(?<!!)targetEnvironment\(macCatalyst\)")


def positives(condition):
    """The os() names a branch condition names without a `!`, and whether it names Mac Catalyst."""
    return set(POSITIVE_OS.findall(condition)), bool(CATALYST.search(condition))


def matches(condition, allowed):
    if allowed is NOT_WATCH and re.search(r"!\s*os\(watchOS\)", condition):
        return True
    names, catalyst = positives(condition)
    if not names or not names <= allowed:
        return False
    return not (catalyst and allowed == {"macOS"})


def check(path, text, client):
    """Problems in one file: (line number, message)."""
    problems = []
    stack = []  # the condition of the branch we are in, per #if level ("" for #else)
    scopes = []  # per open brace: whether the code inside is marked unavailable in app extensions
    marked = False  # an extension-unavailable mark waits for its declaration
    opening = None  # whether the declaration whose body opens at the next `{` is marked
    depth = 0  # parentheses open since that declaration began
    in_block_comment = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if in_block_comment:
            if "*/" in line:
                in_block_comment = False
            continue
        if line.startswith("/*"):
            in_block_comment = "*/" not in line
            continue
        if line.startswith("//"):
            continue
        directive = re.match(r"#(if|elseif|else|endif)\b(.*)", line)
        if directive:
            kind, condition = directive.group(1), COMMENT.sub("", directive.group(2)).strip()
            if kind in ("if", "elseif"):
                for name in re.findall(r"canImport\(\s*(\w+)", condition):
                    if name in ALLOWED_CAN_IMPORT:
                        continue
                    if (path, name) in PENDING:
                        print(f"{path}:{number}: pending: #if canImport({name}) (the edit is handed over; "
                              "it stays a warning until it lands)")
                        continue
                    problems.append((number, f"#if canImport({name}) picks a platform by what is in the build "
                                             f"folder; use #if os(...) (only {', '.join(sorted(ALLOWED_CAN_IMPORT))} "
                                             "may be tested with canImport)"))
            if kind == "if":
                stack.append(condition)
            elif kind == "elseif" and stack:
                stack[-1] = condition
            elif kind == "else" and stack:
                stack[-1] = ""
            elif kind == "endif" and stack:
                stack.pop()
            continue
        if not client:
            continue
        code = COMMENT.sub("", STRING.sub('""', line))
        for pattern, allowed, advice in RULES:
            if pattern.search(code) and not any(matches(condition, allowed) for condition in stack):
                problems.append((number, advice))
        # Rule 4: which declaration the line is in, and whether it (or one around it) is marked.
        inside = bool(scopes) and scopes[-1]
        if EXTENSION_UNAVAILABLE.search(code):
            marked = True
        declares = bool(DECLARATION.match(code))
        if declares:
            # A declaration's signature may span lines (closures in default values among them): its
            # body opens at the first `{` outside parentheses.
            opening = marked
            depth = 0
        here = inside or (opening is not None and opening)
        if SHARED_APPLICATION.search(code) and not here:
            problems.append((number, EXTENSION_ADVICE))
        for character in code:
            if character == "(":
                depth += 1
            elif character == ")":
                depth = max(0, depth - 1)
            elif character == "{":
                if opening is not None and depth == 0:
                    scopes.append(here)
                    opening = None
                else:
                    scopes.append(inside)
            elif character == "}" and scopes:
                scopes.pop()
        if declares:
            marked = False
    return problems


def lint(roots=("Sources", os.path.join("Server", "Sources"))):
    count, failures = 0, 0
    walked = [(folder, files, root not in NOT_CLIENT_ROOTS) for root in roots for folder, _, files in sorted(os.walk(root))]
    for folder, files, client in walked:
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(folder, name)
            count += 1
            with open(path, encoding="utf-8") as handle:
                for number, message in check(path, handle.read(), client):
                    failures += 1
                    print(f"{path}:{number}: error: {message}")
    if failures:
        print(f"platform-lint: {failures} problem(s) in {count} files")
        return 1
    print(f"platform-lint: ok ({count} files)")
    return 0


def self_test():
    good = """
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
#if os(macOS)
    NSWorkspace.shared.open(url)
#elseif os(iOS) || os(tvOS) || os(visionOS)
    @available(iOSApplicationExtension, unavailable)
    func open(_ url: URL) async { await UIApplication.shared.open(url) }
#elseif os(Linux) || os(FreeBSD)
    let process = Process()
    let home = FileManager.default.homeDirectoryForCurrentUser
#endif
#if !os(watchOS)
    let monitor = NWPathMonitor()
#endif
guard let size = Int(exactly: info.st_size) else { throw failure }
/// NSWorkspace in a comment, and "UIApplication" in a string, are fine.
let text = "Process() is fine here"  // and UIApplication in a comment
"""
    bad = """
#if canImport(AppKit)
    NSWorkspace.shared.open(url)
#elseif canImport(UIKit) && !os(watchOS)
    UIApplication.shared.open(url)
#else
    let process = Process()
#endif
#if os(macOS) || targetEnvironment(macCatalyst)
    NSWorkspace.shared.open(url)
#endif
#if !os(iOS)
    let home = FileManager.default.homeDirectoryForCurrentUser
#endif
#if os(iOS) || os(macOS)
    let process = Process()
#endif
#if os(iOS) || os(watchOS)
    case .presentationContextNotProvided: break
#endif
let size = Int(info.st_size)
"""
    marked = """
#if os(iOS) || os(tvOS) || os(visionOS)
    @MainActor
    @available(iOSApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    private static func openWithApplication(_ url: URL) async -> Bool {
        if url.isFileURL { return false }
        return await UIApplication.shared.open(url)
    }
    @available(iOSApplicationExtension, unavailable) var application: UIApplication { UIApplication.shared }
    @available(iOSApplicationExtension, unavailable)
    extension Opener {
        func open(_ url: URL) { UIApplication.shared.open(url) }
    }
    let name = UIApplication.willEnterForegroundNotification
    @available(iOSApplicationExtension, unavailable) func browser() -> SystemBrowser { SystemBrowser() }
    @available(iOSApplicationExtension, unavailable)
    init(
        logger: Logger = Logger(label: "x", factory: { _ in Handler() })
    ) {
        self.init(browser: SystemBrowser(), logger: logger)
    }
#endif
"""
    unmarked = """
#if os(iOS)
    @available(iOSApplicationExtension, unavailable)
    func marked() {}
    func open(_ url: URL) async -> Bool {
        await UIApplication.shared.open(url)
    }
    @available(iOS 17, *)
    var application: UIApplication { UIApplication.shared }
    @available(tvOSApplicationExtension, unavailable)
    struct Opener {
        func open(_ url: URL) { UIApplication .shared.open(url, options: [:]) }
    }
    func makeBrowser() -> any BrowserOpening { SystemBrowser() }
#endif
"""
    assert check("good.swift", good + marked, True) == [], check("good.swift", good + marked, True)
    found = [number for number, _ in check("bad.swift", bad, True)]
    assert found == [2, 3, 4, 5, 5, 7, 10, 13, 16, 19, 21], found
    found = [(number, message == EXTENSION_ADVICE) for number, message in check("unmarked.swift", unmarked, True)]
    assert found == [(6, True), (9, True), (12, True), (14, True)], found
    assert [n for n, _ in check("server.swift", bad, False)] == [2, 4], "server code: only the canImport rule"
    print("platform-lint: self-test ok")
    return 0


sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else lint())
PY
