import Foundation
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

@Suite("Top-level key scan for service errors")
struct TopLevelKeysTests {
    @Test(
        "finds keys at the top level only",
        arguments: [
            (#"{"error": {"code": "x"}}"#, true),
            (#"  {"a": 1, "error" : "boom"}"#, true),
            (#"{"results": [{"error": {"code": "x"}}]}"#, false),
            (#"{"tags": ["error"], "note": "error"}"#, false),
            (#"{"nested": {"error": 1}}"#, false),
            (#"{"escaped \"error\"": 1}"#, false),
            (#"{"errors": 1}"#, false),
            (#"["error"]"#, false),
            (#"not json"#, false),
            (#""#, false),
        ])
    func scan(body: String, expected: Bool) {
        #expect(TopLevelKeys.contains(anyOf: ["error"], in: Data(body.utf8)) == expected)
    }

    @Test("a record with the word error in a value is not a service error")
    func valuesAreNotKeys() async throws {
        let body = #"{"results": [{"id": "1", "tags": ["error"], "status": "error"}], "next_cursor": null}"#
        #expect(!TopLevelKeys.contains(anyOf: ["error", "errors"], in: Data(body.utf8)))
    }
}
