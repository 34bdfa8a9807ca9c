import Foundation
@_spi(OutpostInternal) import OutpostCore
import Testing

@Suite("JSONValue parsing")
struct JSONParsingTests {
    static func parse(_ text: String, maxDepth: Int = JSONValue.defaultMaxParsingDepth) throws -> JSONValue {
        try JSONValue(parsing: Data(text.utf8), maxDepth: maxDepth)
    }

    static let samples: [(String, JSONValue)] = [
        (#"null"#, JSONValue.null),
        (#" true "#, true),
        (#"false"#, false),
        (#"0"#, 0),
        (#"-12"#, -12),
        (#"9223372036854775807"#, .int(Int.max)),
        (#"9223372036854775808"#, .largeInteger("9223372036854775808")),  // exact, not rounded
        (#"2.5"#, 2.5),
        (#"-1e3"#, .double(-1000)),
        (#"1E-2"#, .double(0.01)),
        (#""""#, ""),
        (#""a\"b\\c\/d\b\f\n\r\t""#, "a\"b\\c/d\u{8}\u{c}\n\r\t"),
        (#""\u00e9\u4e2d\ud83d\ude00""#, "é中😀"),
        (#""é中😀""#, "é中😀"),
        (#"[]"#, []),
        (#"{}"#, [:]),
        (#"[1, "two", [3], {"four": 4}]"#, [1, "two", [3], ["four": 4]]),
        (#"{"a": {"b": [null, false]}, "c": 1.5}"#, ["a": ["b": [nil, false]], "c": 1.5]),
        (#"{"dup": 1, "dup": 2}"#, ["dup": 2]),
    ]

    @Test("values parse as Foundation reads them", arguments: samples)
    func parses(text: String, expected: JSONValue) throws {
        #expect(try Self.parse(text) == expected)
    }

    @Test(
        "malformed text throws",
        arguments: [
            "", " ", "[", "]", "{", "{\"a\"}", "{\"a\":}", "{a:1}", "[1,]", "{\"a\":1,}", "01", "-", "1.", ".5", "1e",
            "+1", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\u{1}b\"", "[1 2]",
            "1 2", "NaN", "1e999",
        ])
    func malformed(text: String) {
        #expect(throws: DecodingError.self) { try Self.parse(text) }
    }

    @Test("invalid UTF-8 in a string throws")
    func invalidUTF8() {
        let bytes: [UInt8] = [0x22, 0xC3, 0x28, 0x22]
        #expect(throws: DecodingError.self) { try JSONValue(parsing: Data(bytes)) }
    }

    @Test("nesting is limited to maxDepth")
    func depth() throws {
        let deep = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try Self.parse(deep, maxDepth: 64) != .null)
        #expect(throws: DecodingError.self) { try Self.parse(deep, maxDepth: 63) }
        let objects = String(repeating: "{\"a\":", count: 10) + "1" + String(repeating: "}", count: 10)
        #expect(try Self.parse(objects, maxDepth: 10)["a"]?["a"] != nil)
        #expect(throws: DecodingError.self) { try Self.parse(objects, maxDepth: 9) }
    }

    @Test("the depth scan ignores brackets in strings and stops past the limit")
    func depthScan() {
        #expect(JSONValue.nestingDepth(of: Data(#"{"a": [1, {"b": "[[[{{{"}]}"#.utf8), stoppingAfter: 64) == 3)
        #expect(JSONValue.nestingDepth(of: Data(#"["\"[[["]"#.utf8), stoppingAfter: 64) == 1)
        #expect(JSONValue.nestingDepth(of: Data("1".utf8), stoppingAfter: 64) == 0)
        let deep = Data((String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)).utf8)
        #expect(JSONValue.nestingDepth(of: deep, stoppingAfter: 64) == 65)
    }

    @Test("documents Foundation writes parse back to the same value")
    func roundTrip() throws {
        let value: JSONValue = [
            "text": "quote \" backslash \\ newline \n emoji 😀 nul \u{0}", "int": -42, "double": 0.1,
            "list": [[], [:], [nil, true]], "nested": ["deeper": ["deepest": 1]],
        ]
        #expect(try JSONValue(parsing: value.jsonData()) == value)
        #expect(try JSONValue(parsing: value.jsonData(pretty: true)) == value)
    }
}

@Suite("JSONValue parsing within limits")
struct JSONParsingLimitTests {
    static func parse(_ text: String, keys: Int = .max, exact: Bool = true) throws -> JSONValue {
        try JSONValue(
            parsing: Data(text.utf8), limits: JSONParsingLimits(maxDepth: 64, maxKeysPerObject: keys, exactNumbers: exact))
    }

    static func refusal(_ text: String, keys: Int = .max) -> JSONLimitExceeded? {
        do {
            _ = try parse(text, keys: keys)
            return nil
        } catch {
            return error as? JSONLimitExceeded
        }
    }

    @Test(
        "numbers that read back with their value are taken",
        arguments: [
            "0", "-0", "-0.0", "0e5", "1.50", "100", "1e2", "1E+2", "0.1", "-2.5e-5", "5e-324", "1.7976931348623157e308",
            "123456789012345678901234567890", "0.30000000000000004", "9007199254740993",
        ])
    func exact(_ text: String) throws {
        let value = try Self.parse(#"{"n": \#(text)}"#)
        #expect(value["n"] != nil)
    }

    @Test(
        "numbers that would not read back with their value are refused, naming where they are",
        arguments: [
            "0.12345678901234567890", "1e400", "-1e400", "1e-400", "3.141592653589793238", String(repeating: "9", count: 310),
            "1.00000000000000000001",
        ])
    func inexact(_ text: String) throws {
        let refusal = try #require(Self.refusal(#"{"a": [{"b": 1}, {"c~/": \#(text)}]}"#))
        #expect(refusal.reason == .inexactNumber(text))
        #expect(refusal.pointer == "/a/1/c~0~1")
        // Without exact numbers, only what a double cannot hold at all is refused.
        if text.contains("e") && text.contains("400") && !text.contains("-400") {
            #expect(throws: DecodingError.self) { try Self.parse(#"{"n": \#(text)}"#, exact: false) }
        } else {
            _ = try Self.parse(#"{"n": \#(text)}"#, exact: false)
        }
    }

    @Test("an object of more keys than the limit is refused where it is; repeated keys count; at the limit it is taken")
    func keys() throws {
        let three = #"{"a": 1, "b": 2, "c": 3}"#
        #expect(try Self.parse(three, keys: 3).objectValue?.count == 3)
        #expect(
            Self.refusal(#"{"x": [\#(three)]}"#, keys: 2) == JSONLimitExceeded(.tooManyKeys(2), path: [.key("x"), .index(0)]))
        #expect(Self.refusal(#"{"a": 1, "a": 2, "a": 3}"#, keys: 2)?.reason == .tooManyKeys(2))
        #expect(Self.refusal(three, keys: 2)?.pointer == "")
    }
}
