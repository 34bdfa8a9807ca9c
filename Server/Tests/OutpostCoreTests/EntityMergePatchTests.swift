import Foundation
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

private func json(_ text: String) -> JSONValue {
    // Test fixtures are literals written in this file; a typo should fail loudly.
    do { return try JSONValue(parsing: Data(text.utf8)) } catch { Issue.record("bad fixture \(text)"); return .null }
}

@Suite("Merge patch (RFC 7396)")
struct EntityMergePatchTests {
    /// RFC 7396, appendix A: original, patch, result.
    static let appendixA: [(String, String, String)] = [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ]

    @Test("apply: every example of RFC 7396 appendix A", arguments: 0..<15)
    func applyAppendixA(_ index: Int) {
        let (original, patch, result) = Self.appendixA[index]
        #expect(MergePatch.apply(json(patch), to: json(original)) == json(result))
    }

    /// The document, patch and result of RFC 7396 section 3's example.
    static let sectionThree = (
        original: #"""
        {"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"},
         "tags": ["example", "sample"], "content": "This will be unchanged"}
        """#,
        patch: #"""
        {"title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": {"familyName": null}, "tags": ["example"]}
        """#,
        result: #"""
        {"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
         "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890"}
        """#
    )

    @Test("apply: the example of RFC 7396 section 3")
    func applySectionThree() {
        let (original, patch, result) = Self.sectionThree
        #expect(MergePatch.apply(json(patch), to: json(original)) == json(result))
    }

    @Test("diff: the section 3 documents give exactly the section 3 patch")
    func diffSectionThree() {
        let (original, updated) = (json(Self.sectionThree.original), json(Self.sectionThree.result))
        let patch = MergePatch.diff(from: original, to: updated)
        #expect(patch == json(Self.sectionThree.patch))
        #expect(MergePatch.apply(patch, to: original) == updated)
    }

    @Test("diff: removed keys become null, unchanged keys are left out")
    func diffRemovals() {
        let patch = MergePatch.diff(from: json(#"{"a":1,"b":2,"c":3}"#), to: json(#"{"a":1,"c":4}"#))
        #expect(patch == json(#"{"b":null,"c":4}"#))
    }

    @Test("diff: nested objects are diffed recursively, at any depth")
    func diffNested() {
        let original = json(#"{"x":{"y":{"z":1,"keep":true},"w":[1,2]}}"#)
        let updated = json(#"{"x":{"y":{"z":2,"keep":true},"w":[1,2]}}"#)
        #expect(MergePatch.diff(from: original, to: updated) == json(#"{"x":{"y":{"z":2}}}"#))
    }

    @Test("diff: arrays are replaced whole, even when one element changed")
    func diffArrays() {
        let patch = MergePatch.diff(
            from: json(#"{"tags":["a","b","c"],"n":[{"k":1}]}"#), to: json(#"{"tags":["a","b","d"],"n":[{"k":1}]}"#))
        #expect(patch == json(#"{"tags":["a","b","d"]}"#))
    }

    @Test("diff: a value that turns into or out of an object is replaced whole")
    func diffTypeChanges() {
        #expect(MergePatch.diff(from: json(#"{"a":{"b":1}}"#), to: json(#"{"a":"flat"}"#)) == json(#"{"a":"flat"}"#))
        #expect(MergePatch.diff(from: json(#"{"a":"flat"}"#), to: json(#"{"a":{"b":1}}"#)) == json(#"{"a":{"b":1}}"#))
        #expect(MergePatch.diff(from: json(#"{"a":1}"#), to: json(#"[1]"#)) == json(#"[1]"#))
    }

    @Test("diff: equal documents give the empty patch")
    func diffEqual() {
        let document = json(#"{"a":{"b":[1,2,{"c":null}]},"d":"e"}"#)
        let patch = MergePatch.diff(from: document, to: document)
        #expect(MergePatch.isEmpty(patch))
        #expect(!MergePatch.isEmpty(MergePatch.diff(from: document, to: json(#"{"d":"e"}"#))))
    }

    @Test(
        "diff then apply round-trips",
        arguments: [
            (#"{"a":1,"b":{"c":[1,2],"d":"x"},"e":true}"#, #"{"b":{"c":[2],"f":{"g":1}},"e":false,"h":"new"}"#),
            (#"{}"#, #"{"a":{"b":{"c":1}}}"#),
            (#"{"a":{"b":{"c":1}}}"#, #"{}"#),
            (#"{"a":[{"b":1}]}"#, #"{"a":[{"b":1},{"b":2}]}"#),
        ])
    func roundTrip(_ pair: (String, String)) {
        let original = json(pair.0)
        let updated = json(pair.1)
        #expect(MergePatch.apply(MergePatch.diff(from: original, to: updated), to: original) == updated)
    }
}
