import Crypto
import Foundation
@_spi(OutpostInternal) import OutpostCore
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("List pages and cursors written by hand", .closesWhatItOpens)
struct ListPageTextTests {
    static let tricky = [
        "", "plain", "quote\" backslash\\ slash/", "line\nbreak\ttab\r", "\u{1}\u{1f}", "é中😀", "a|created|n=\"x\"",
    ]

    @Test("a quoted string parses back to itself", arguments: tricky)
    func quoted(text: String) throws {
        #expect(try JSONValue(parsing: Data(JSONText.quoted(text).utf8)) == .string(text))
    }

    @Test("a cursor round-trips for any list name, and a changed one is refused", arguments: tricky)
    func cursorRoundTrip(list: String) throws {
        let codec = CursorCodec(secret: Data(repeating: 7, count: 32))
        let payload = CursorCodec.Payload(list: list, direction: "n", time: 1_795_241_267_933, seq: 42)
        let cursor = codec.encode(payload)
        #expect(!cursor.contains("=") && !cursor.contains("+") && !cursor.contains("/"))
        #expect(try codec.decode(cursor, list: list) == payload)
        #expect(throws: ServerError.self) { try codec.decode(cursor, list: list + "x") }
        var tampered = Array(cursor)
        tampered[0] = tampered[0] == "e" ? "f" : "e"
        #expect(throws: ServerError.self) { try codec.decode(String(tampered), list: list) }
    }

    @Test("base64url matches the standard alphabet with + and / swapped and no padding, both ways")
    func base64URL() {
        for length in 0..<40 {
            let data = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 251) })
            let expected = data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(data) == expected)
            #expect(Base64URL.decode(expected) == Array(data))
        }
    }

    @Test("a page is its records' wire text and the page info, in order")
    func page() throws {
        let records = [
            StoredRecord(type: "t", id: "a", owner: nil, body: #"{"n":1}"#, version: 1, createdAt: 0, updatedAt: 0, seq: 1),
            StoredRecord(type: "t", id: "b", owner: nil, body: "{}", version: 1, createdAt: 1000, updatedAt: 1000, seq: 2),
        ]
        let text = RecordRoutes.listText(
            records, [("next", .string("http://x/records/t?cursor=a.b")), ("next_cursor", "a.b"), ("prev_cursor", .null)])
        #expect(text.hasPrefix(#"{"results":[{"id":"a","#))
        #expect(text.hasSuffix(#""next":"http://x/records/t?cursor=a.b","next_cursor":"a.b","prev_cursor":null}"#))
        let parsed = try JSONValue(parsing: Data(text.utf8))
        #expect(parsed["results"]?.arrayValue?.count == 2)
        #expect(parsed["results"]?[0]?["n"] == 1)
    }

    @Test("a page keeps its records without a string each: they read back as given, first to last, and reversed")
    func pageKeys() {
        let entries = [
            RecordPageText.Entry(id: "a9436633739d03a7", version: 3, createdAt: -1, updatedAt: 5, seq: 1),
            RecordPageText.Entry(id: "", version: 1, createdAt: 0, updatedAt: 0, seq: 2),
            RecordPageText.Entry(
                id: "é中😀-long-enough-for-the-heap", version: Int.max, createdAt: .min, updatedAt: .max, seq: .max),
        ]
        var page = RecordPageText(text: Array("x".utf8), records: entries, more: true)
        #expect(page.records == entries)
        #expect(page.first == entries.first && page.last == entries.last)
        #expect(page.keys.inReverse() == RecordPageText(text: [], records: entries.reversed(), more: false).keys)
        #expect(page.keys.inReverse().inReverse() == page.keys)
        // Equal records, equal pages; any field of any record changed, a different page.
        #expect(page == RecordPageText(text: Array("x".utf8), records: entries, more: true))
        for index in entries.indices {
            var changed = entries
            changed[index].seq ^= 1
            #expect(page != RecordPageText(text: Array("x".utf8), records: changed, more: true))
        }
        page.records = []
        #expect(page.records.isEmpty && page.first == nil && page.last == nil && page.keys.bytes.isEmpty)
        // The keys are the ETag's input: each id length-prefixed, then its version, little-endian.
        let one = RecordPageText(text: [], records: [entries[0]], more: false)
        #expect(one.keys.bytes == [16, 0, 0, 0, 0, 0, 0, 0] + Array("a9436633739d03a7".utf8) + [3, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test("a page's weak ETag changes with any record's version, the set of records, or the page info")
    func listETag() {
        let a = StoredRecord(type: "t", id: "a", owner: nil, body: #"{"n":1}"#, version: 1, createdAt: 0, updatedAt: 0, seq: 1)
        let b = StoredRecord(type: "t", id: "b", owner: nil, body: "{}", version: 1, createdAt: 1000, updatedAt: 1000, seq: 2)
        var changed = b
        changed.version = 2
        let info = JSONText.object([("next_cursor", "x.y"), ("prev_cursor", .null)])
        func etag(_ records: [StoredRecord], _ info: String) -> String {
            RecordRoutes.listETag(RecordPageText(records: records).keys, info: ArraySlice(info.utf8))
        }
        let tag = etag([a, b], info)
        #expect(tag.hasPrefix("W/\"") && tag.hasSuffix("\"") && tag.count == 28)
        #expect(etag([a, b], info) == tag)
        #expect(etag([a, changed], info) != tag)
        #expect(etag([a], info) != tag)
        #expect(etag([b, a], info) != tag)
        #expect(etag([a, b], JSONText.object([("next_cursor", "x.z"), ("prev_cursor", .null)])) != tag)
        // The response carries the same tag as its page and info give.
        let response = RecordRoutes.listResponse([a, b], [("next_cursor", "x.y"), ("prev_cursor", .null)])
        #expect(response.headers[.eTag] == etag([a, b], #""next_cursor":"x.y","prev_cursor":null"#))
    }

    @Test("quoting into bytes writes what quoted writes", arguments: tricky)
    func appendQuoted(text: String) {
        var bytes: [UInt8] = [1]
        JSONText.appendQuoted(text, to: &bytes)
        #expect(bytes == [1] + Array(JSONText.quoted(text).utf8))
        var members: [UInt8] = []
        JSONText.appendMembers([(text, .string(text)), ("n", 3), ("z", .null), ("b", true)], to: &members)
        #expect(
            "{" + String(decoding: members, as: UTF8.self) + "}"
                == JSONText.object([(text, .string(text)), ("n", 3), ("z", .null), ("b", true)]))
        let parsed = try? JSONValue(parsing: Data(("{" + String(decoding: members, as: UTF8.self) + "}").utf8))
        #expect(parsed?[text] == .string(text))
        #expect(parsed?["z"] == .null)
    }

    @Test("a cursor appended to bytes is the encoded cursor, after what was there")
    func cursorAppend() throws {
        let codec = CursorCodec(secret: Data(repeating: 9, count: 32))
        let payload = CursorCodec.Payload(list: "t|created|", direction: "p", time: -5, seq: 1 << 40)
        var bytes = Array("x".utf8)
        codec.append(payload, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x" + codec.encode(payload))
        #expect(try codec.decode(codec.encode(payload), list: "t|created|") == payload)
    }

    @Test(
        "query encoding escapes everything but RFC 3986's unreserved ASCII and parses back",
        arguments: tricky.filter { !$0.isEmpty })
    func queryEncoding(text: String) throws {
        let encoded = URLEncodedForm.encode([(text, text), ("cursor", "a.b-c_d~e")])
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        #expect(encoded.utf8.allSatisfy { unreserved.contains($0) || "%=&".utf8.contains($0) })
        #expect(encoded.hasSuffix("&cursor=a.b-c_d~e"))
        #expect(try URLEncodedForm.parse(encoded.utf8) == [text: text, "cursor": "a.b-c_d~e"])
    }
}

@Suite("Wire bytes and token hashes written by hand")
struct WireBytesTests {
    @Test(
        "updated_at is written from created_at's bytes only within the same second",
        arguments: [
            (Int64(1_795_241_267_000), Int64(1_795_241_267_999)), (1_795_241_267_999, 1_795_241_268_000), (-1, -1000),
            (-1000, -1001), (0, 999), (253_402_300_799_000, 253_402_300_799_500), (253_402_300_799_999, 253_402_300_800_000),
        ])
    func sameSecondTimestamps(created: Int64, updated: Int64) throws {
        let record = StoredRecord(
            type: "t", id: "a", owner: nil, body: "{}", version: 1, createdAt: created, updatedAt: updated, seq: 1)
        let parsed = try JSONValue(parsing: Data(record.wireText.utf8))
        #expect(parsed["created_at"] == .string(StoredRecord.timestamp(created)))
        #expect(parsed["updated_at"] == .string(StoredRecord.timestamp(updated)))
        let iso = ISO8601DateFormatter()
        for (field, milliseconds) in [("created_at", created), ("updated_at", updated)] where milliseconds < 253_402_300_800_000 {
            let text = try #require(parsed[field]?.stringValue)
            let date = try #require(iso.date(from: text))
            #expect(Int64(date.timeIntervalSince1970) == WireText.floorSeconds(milliseconds))
        }
    }

    @Test("a record's wire text is the same bytes as before the byte writer")
    func recordWireText() {
        let record = StoredRecord(
            type: "t", id: "0123abcd", owner: nil, body: #"{"a":"é\n","b":[1,{}]}"#, version: 3, createdAt: 1_795_241_267_933,
            updatedAt: -1, seq: 9)
        #expect(
            record.wireText
                == #"{"id":"0123abcd","created_at":"2026-11-21T06:07:47Z","updated_at":"1969-12-31T23:59:59Z","a":"é\n","b":[1,{}]}"#
        )
        let empty = StoredRecord(
            type: "t", id: "z", owner: nil, body: "{}", version: 1, createdAt: 0, updatedAt: 253_402_300_800_000, seq: 1)
        #expect(empty.wireText == #"{"id":"z","created_at":"1970-01-01T00:00:00Z","updated_at":"10000-01-01T00:00:00Z"}"#)
        let page = RecordRoutes.listText([record, empty], [("next", .null)])
        #expect(page == #"{"results":["# + record.wireText + "," + empty.wireText + #"],"next":null}"#)
    }

    @Test("a page's ETag and a cursor are the same bytes as before (digests computed independently)")
    func goldenETagAndCursor() throws {
        let a = StoredRecord(type: "t", id: "a", owner: nil, body: "{}", version: 1, createdAt: 0, updatedAt: 0, seq: 1)
        let b = StoredRecord(type: "t", id: "b", owner: nil, body: "{}", version: 2, createdAt: 0, updatedAt: 0, seq: 2)
        // The page info's members, without the braces (sha256 of the ids and versions, then these bytes).
        let info = ArraySlice(#""next_cursor":"x.y","prev_cursor":null"#.utf8)
        #expect(RecordRoutes.listETag(RecordPageText(records: [a, b]).keys, info: info) == #"W/"ec17fcb025666af3f523a6c8""#)
        let codec = CursorCodec(secret: Data(repeating: 7, count: 32))
        let payload = CursorCodec.Payload(list: "t|created|", direction: "n", time: 1_795_241_267_933, seq: 42)
        let cursor = codec.encode(payload)
        #expect(
            cursor
                == "eyJkaXJlY3Rpb24iOiJuIiwibGlzdCI6InR8Y3JlYXRlZHwiLCJzZXEiOjQyLCJ0aW1lIjoxNzk1MjQxMjY3OTMzfQ.sWR9q717xK7rKaFCDK2XSw"
        )
        // The keyed HMAC is copied, not shared: the same cursor again, and another one in between.
        _ = codec.encode(CursorCodec.Payload(list: "other", direction: "p", time: 1, seq: 1))
        #expect(codec.encode(payload) == cursor)
        #expect(try codec.decode(cursor, list: "t|created|") == payload)
    }

    @Test(
        "the cursor codec's own HMAC is swift-crypto's HMAC-SHA256 for keys shorter than, equal to and longer than a block",
        arguments: [0, 1, 32, 63, 64, 65, 200])
    func cursorHMAC(keyLength: Int) {
        let secret = Data((0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
        let codec = CursorCodec(secret: secret)
        for length in [0, 1, 55, 56, 64, 119, 300] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ keyLength) }
            let ours = message.withUnsafeBytes { codec.authenticationCode($0) }
            let theirs = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
            #expect(Array(ours) == Array(theirs), "key \(keyLength) bytes, message \(length) bytes")
        }
    }

    @Test("cursors made again come from the codec's cache, byte for byte; the cache stays within its capacity")
    func cursorCache() throws {
        let codec = CursorCodec(secret: Data(repeating: 9, count: 32))
        let payloads = (0..<(CursorCache.capacity + 40)).map {
            CursorCodec.Payload(list: "t|created|", direction: $0 % 2 == 0 ? "n" : "p", time: Int64($0) * 1000, seq: Int64($0))
        }
        for payload in payloads {
            var computed: [UInt8] = []
            codec.make(payload, to: &computed)
            let first = codec.encode(payload)
            #expect(Array(first.utf8) == computed)
            #expect(codec.encode(payload) == first)  // from the cache
            #expect(try codec.decode(first, list: "t|created|") == payload)
            #expect(codec.made.count <= CursorCache.capacity)
        }
        // Another key makes other cursors for the same payloads (the cache is the codec's own).
        let other = CursorCodec(secret: Data(repeating: 8, count: 32))
        #expect(other.encode(payloads[0]) != codec.encode(payloads[0]))
    }

    @Test("token hashes and HMACs are lower-case hex of SHA-256 (FIPS 180-2 and RFC 4231 vectors)")
    func hexDigests() {
        #expect(Secrets.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Secrets.hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Secrets.hmac("what do ya want for nothing?", key: Data("Jefe".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}

@Suite("Bearer tokens read from the Authorization header")
struct BearerHeaderTests {
    @Test(
        "the scheme in any case, spaces and tabs around the token removed, as Foundation's trimming does",
        arguments: [
            ("Bearer opa_abc", "opa_abc"), ("bearer opa_abc", "opa_abc"), ("BEARER  opa_abc \t", "opa_abc"),
            ("Bearer ", ""), ("Bearer \t ", ""), ("BeArEr x.y-z_~+/=", "x.y-z_~+/="), ("Bearer é\u{2003}", "é"),
        ])
    func bearer(value: String, token: String) {
        #expect(AuthService.bearerToken(value) == token)
        #expect(
            AuthService.bearerToken(value) == String(value.dropFirst(7)).trimmingCharacters(in: .whitespaces))
    }

    @Test("other schemes and short values are not bearer tokens", arguments: ["Basic abc", "Bearer", "Bearerx abc", "", "Bear"])
    func notBearer(value: String) {
        #expect(AuthService.bearerToken(value) == nil)
    }
}
