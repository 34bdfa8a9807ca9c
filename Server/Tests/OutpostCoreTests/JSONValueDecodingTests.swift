import Foundation
import Testing

@_spi(OutpostInternal) @testable import OutpostCore

@Suite("JSONValue through a Decoder and untyped pages")
struct JSONValueDecodingTests {
    struct Wrapped: Decodable { var value: JSONValue }

    /// The parser's samples, less the two places where Foundation's decoder reads differently: a
    /// number with an exponent that is whole (`-1e3` is an `Int` to it) and a repeated key (it keeps
    /// the first).
    static let samples = JSONParsingTests.samples.filter { !$0.0.contains("e3") && !$0.0.contains("dup") }

    @Test("a Decoder reads every kind of value as the parser does", arguments: samples)
    func decoderMatchesParser(text: String, expected: JSONValue) throws {
        let data = Data(text.utf8)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == expected)
        let wrapped = try JSONDecoder().decode(Wrapped.self, from: Data("{\"value\": \(text)}".utf8))
        #expect(wrapped.value == expected)
    }

    /// Foundation's decoder reads a whole number as an `Int` however it is written (`1.0`, `1e2`), as
    /// it did before the kinds were reordered; strings, booleans and numbers stay apart.
    @Test("kinds that look alike stay apart: true and 1, \"1\" and 1, 1.5 and 1")
    func kindsStayApart() throws {
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(#"[1, 1.5, true, "1", 1e2, -0, {"a": [false]}]"#.utf8))
        let expected: [JSONValue] = [.int(1), .double(1.5), .bool(true), .string("1"), .int(100), .int(0), ["a": [false]]]
        for (index, element) in (value.arrayValue ?? []).enumerated() {
            #expect(element == expected[index], "element \(index): \(String(reflecting: element))")
        }
    }

    static let page = Data(
        #"{"results": [{"id": "a", "n": 1, "tags": ["x"]}, {"id": "b", "n": 18446744073709551616, "ok": true}], "next_cursor": "c2", "prevCursor": "c0", "total": null}"#
            .utf8)

    @Test("an untyped page read from the bytes equals the decoder's reading")
    func untypedPage() throws {
        let keys = ListKeys(itemsKey: "results", metaKeys: ["next_cursor", "prev_cursor", "total"])
        let decoder = JSONDecoder().copy(adding: [.outpostListKeys: keys])
        let fast = try #require(ListBody<JSONValue>.untyped(Self.page, keys: keys, decoder: decoder))
        let slow = try decoder.decode(ListBody<JSONValue>.self, from: Self.page)
        #expect(fast.items == slow.items)
        #expect(fast.meta == slow.meta)
        #expect(fast.items.count == 2)
        #expect(fast.meta == ["next_cursor": "c2", "prev_cursor": "c0"])

        let bare = Data(#"[{"id": "a"}, 2]"#.utf8)
        let bareKeys = ListKeys(itemsKey: nil, metaKeys: [])
        #expect(ListBody<JSONValue>.untyped(bare, keys: bareKeys, decoder: decoder)?.items == [["id": "a"], 2])
    }

    @Test("typed items, key strategies and other shapes go through the decoder")
    func fallsBack() {
        struct Row: Decodable { var id: String }
        let keys = ListKeys(itemsKey: "results", metaKeys: [])
        #expect(ListBody<Row>.untyped(Self.page, keys: keys, decoder: JSONDecoder()) == nil)
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        #expect(ListBody<JSONValue>.untyped(Self.page, keys: keys, decoder: snake) == nil)
        #expect(
            ListBody<JSONValue>.untyped(Self.page, keys: .init(itemsKey: "items", metaKeys: []), decoder: JSONDecoder()) == nil)
        #expect(ListBody<JSONValue>.untyped(Data("{".utf8), keys: keys, decoder: JSONDecoder()) == nil)
    }
}
