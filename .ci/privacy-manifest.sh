#!/usr/bin/env bash
# Privacy manifests: App Store Connect refuses an upload whose code calls a "required reason" API
# without declaring why (ITMS-91053). SwiftPM links every client module into the app, so each
# module of Sources/ that calls one ships a PrivacyInfo.xcprivacy resource declaring the category
# and a reason, no tracking and no tracking domains.
#
#   bash .ci/privacy-manifest.sh              # check Sources/
#   bash .ci/privacy-manifest.sh --self-test  # check the checker on samples
#
# The APIs (Apple, "Describing use of required reason API"), by category:
#   file timestamps: stat, fstat, lstat, fstatat, getattrlist, getattrlistbulk, fgetattrlist,
#     modificationDate, creationDate, fileModificationDate, contentModificationDateKey,
#     creationDateKey (and their NSFile…/NSURL… spellings);
#   system boot time: systemUptime, mach_absolute_time;
#   disk space: volumeAvailableCapacity…Keys, statfs, statvfs, fstatfs, fstatvfs, systemFreeSize, systemSize;
#   user defaults: UserDefaults, NSUserDefaults;
#   active keyboards: activeInputModes.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os
import plistlib
import re
import sys
import tempfile

CATEGORIES = {
    "NSPrivacyAccessedAPICategoryFileTimestamp": re.compile(
        r"(?<![A-Za-z0-9_.])(f|l)?stat(at)?\(|\b(f)?getattrlist(bulk)?\b|\.(modificationDate|creationDate)\b|"
        r"\bfileModificationDate\b|\b(contentModificationDate|creationDate)Key\b|NSFile(Modification|Creation)Date"),
    "NSPrivacyAccessedAPICategorySystemBootTime": re.compile(r"\bsystemUptime\b|\bmach_absolute_time\b"),
    "NSPrivacyAccessedAPICategoryDiskSpace": re.compile(
        r"\bvolume(Available|Total)Capacity\w*Key\b|(?<![A-Za-z0-9_.])f?statv?fs\(|\bsystem(Free)?Size\b"),
    "NSPrivacyAccessedAPICategoryUserDefaults": re.compile(r"\b(NS)?UserDefaults\b"),
    "NSPrivacyAccessedAPICategoryActiveKeyboards": re.compile(r"\bactiveInputModes\b"),
}
MANIFEST = "PrivacyInfo.xcprivacy"


def used(module_dir):
    """Category -> first 'file:line' that uses it, for the Swift files of one module."""
    found = {}
    for root, _, files in os.walk(module_dir):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    code = line.split("//", 1)[0]
                    for category, pattern in CATEGORIES.items():
                        if category not in found and pattern.search(code):
                            found[category] = f"{path}:{number}"
    return found


def target_block(package_text, module):
    """The text of `.target(name: "module", ...)` in Package.swift, up to the next target."""
    match = re.search(r'\.target\(\s*name:\s*"' + re.escape(module) + '"', package_text)
    if not match:
        return ""
    start = match.end()
    following = re.search(r"\.(target|testTarget|executableTarget)\(", package_text[start:])
    return package_text[start:start + following.start()] if following else package_text[start:]


def check(sources, package_text):
    problems = []
    for module in sorted(os.listdir(sources)):
        module_dir = os.path.join(sources, module)
        if not os.path.isdir(module_dir):
            continue
        uses = used(module_dir)
        manifest = os.path.join(module_dir, MANIFEST)
        if not uses:
            continue
        if not os.path.exists(manifest):
            first = ", ".join(f"{c} ({where})" for c, where in uses.items())
            problems.append(f"{module}: calls required-reason APIs ({first}) but has no {MANIFEST}; "
                            f"add one declaring each category with its reason, and list it in the target's resources")
            continue
        with open(manifest, "rb") as handle:
            try:
                plist = plistlib.load(handle)
            except Exception as error:
                problems.append(f"{manifest}: not a property list ({error})")
                continue
        if plist.get("NSPrivacyTracking") is not False:
            problems.append(f"{manifest}: NSPrivacyTracking must be false (the kit does not track)")
        if plist.get("NSPrivacyTrackingDomains", []) != []:
            problems.append(f"{manifest}: NSPrivacyTrackingDomains must be empty")
        declared = {}
        for entry in plist.get("NSPrivacyAccessedAPITypes", []):
            declared[entry.get("NSPrivacyAccessedAPIType")] = entry.get("NSPrivacyAccessedAPITypeReasons", [])
        for category, where in uses.items():
            if not declared.get(category):
                problems.append(f"{manifest}: {where} uses {category}, which the manifest does not declare with a reason")
        if f'.process("{MANIFEST}")' not in target_block(package_text, module) and \
                f'.copy("{MANIFEST}")' not in target_block(package_text, module):
            problems.append(f"Package.swift: target {module} does not list {MANIFEST} in its resources")
    return problems


def self_test():
    good = {"NSPrivacyTracking": False, "NSPrivacyTrackingDomains": [], "NSPrivacyCollectedDataTypes": [],
            "NSPrivacyAccessedAPITypes": [{"NSPrivacyAccessedAPIType": "NSPrivacyAccessedAPICategoryFileTimestamp",
                                           "NSPrivacyAccessedAPITypeReasons": ["C617.1"]}]}
    cases = [
        ("var s = stat(); fstat(fd, &s)", good, True, True),
        ("var s = stat(); fstat(fd, &s)", None, True, False),
        ("let d = attributes[.modificationDate]", good, False, False),
        ("UserDefaults.standard.set(1, forKey: \"k\")", good, True, False),
        ("// stat( in a comment only", None, False, True),
        ("let up = ProcessInfo.processInfo.systemUptime", dict(good, NSPrivacyTracking=True), True, False),
    ]
    failures = 0
    for source, manifest, listed, expect_ok in cases:
        with tempfile.TemporaryDirectory() as folder:
            module = os.path.join(folder, "M")
            os.makedirs(module)
            with open(os.path.join(module, "a.swift"), "w") as handle:
                handle.write(source + "\n")
            if manifest is not None:
                with open(os.path.join(module, MANIFEST), "wb") as handle:
                    plistlib.dump(manifest, handle)
            package = '.target(name: "M"' + (', resources: [.process("PrivacyInfo.xcprivacy")]' if listed else "") + ")"
            ok = not check(folder, package)
            if ok != expect_ok:
                failures += 1
                print(f"privacy-manifest self-test: {source!r} gave {'ok' if ok else 'a finding'}")
    if failures:
        sys.exit(1)
    print(f"privacy-manifest self-test: ok ({len(cases)} samples)")


if "--self-test" in sys.argv:
    self_test()
    sys.exit(0)
with open("Package.swift", encoding="utf-8") as handle:
    package_text = handle.read()
problems = check("Sources", package_text)
for problem in problems:
    print("privacy-manifest: " + problem)
if problems:
    sys.exit(1)
modules = sorted(m for m in os.listdir("Sources") if os.path.exists(os.path.join("Sources", m, MANIFEST)))
print(f"privacy-manifest: ok (manifests in {', '.join(modules)})")
PY
