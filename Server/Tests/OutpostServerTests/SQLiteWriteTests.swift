import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// Record writes on SQLite: the log's checkpoints run on the write connection's thread, queued
/// after the commit that made them due; and the stored text of the fields.
@Suite("SQLite writes: checkpoints and stored text", .closesWhatItOpens)
struct SQLiteWriteTests {
    @Test("record writes leave the log's checkpoints to the connection's thread, and every record stays")
    func checkpointsOnThread() async throws {
        try await ListStatementTests().withStorage { storage in
            let handle = storage.connection.connection
            #expect(handle.checkpoints == 0)
            let tripsBefore = handle.trips.onThread
            // Each insert appends several pages (the record, its indexes, its change): enough of
            // them pass the checkpoint threshold more than once.
            var ids: [String] = []
            while ids.count < 2 * SQLiteHandle.checkpointFrames / 4 {
                ids.append(
                    try await storage.createRecord(type: "notes", fields: ["n": .int(ids.count)], owner: nil, isPrivate: false)
                        .id)
            }
            // A checkpoint is queued on the connection's thread: a statement queued after it runs after it.
            _ = try await storage.connection.query("SELECT 1")
            #expect(handle.checkpoints >= 1)
            // Every insert was one statement on the connection's thread (its commit included).
            #expect(handle.trips.onThread == tripsBefore + ids.count + 1)
            let pages = try await storage.connection.query("PRAGMA wal_checkpoint(PASSIVE)")
            // The log was restarted after a checkpoint: it holds fewer pages than everything written.
            let logPages = pages.first?.values[1].integer ?? .max
            #expect(logPages < ids.count * 4)
            for id in ids.prefix(3) + ids.suffix(3) {
                #expect(try await storage.record(type: "notes", id: id) != nil)
            }
            let page = try await storage.listRecords(RecordQuery(type: "notes", limit: 100), from: nil, backwards: false)
            #expect(page.count == 101)
        }
    }

    /// Values whose text is easy to get wrong: escapes, keys that sort differently by bytes and
    /// by Unicode, nesting, and numbers left to `JSONEncoder`.
    static let tricky: [[String: JSONValue]] = [
        [:],
        ["title": "hello", "n": 1, "done": false, "none": nil],
        ["a10": 1, "a9": 2, "B": 3, "a": 4, "_": 5, "aB": 6, "ab": 7, "1": 8, "10": 9, "2": 10],
        ["e\u{301}x": 1, "éa": 2, "ﬁ": 3, "fj": 4, "\u{212B}c": 5, "😀": 6, "ß": 7, "ss": 8],
        ["s": "a/b\"c\\d\u{1}\u{1f}\n\t\r\u{8}\u{c}\u{7f}é😀\u{2028}</script>"],
        ["nested": ["list": [1, "two", [3, ["x": nil]], [:], []], "deep": ["z": ["y": ["x": true]]]]],
        ["min": .int(Int.min), "max": .int(Int.max), "zero": 0, "negative": -42],
        ["double": 0.1, "name": "with a double"],
        ["inner": ["big": .largeInteger("18446744073709551616")]],
        ["list": [1.5, 2, "3"]],
    ]

    @Test("the stored text of fields is JSONEncoder's, byte for byte", arguments: tricky)
    func bodyTextMatches(_ fields: [String: JSONValue]) throws {
        #expect(try RecordBodyText.text(fields) == JSONValue.object(fields).jsonString())
    }

    @Test("an integer of any length is stored as its digits; a value JSON cannot hold is refused, never stored as null")
    func exactNumbers() throws {
        let digits = "-" + String(repeating: "9876543210", count: 20)
        let text = try RecordBodyText.text([
            "big": .largeInteger(digits), "small": .double(.leastNonzeroMagnitude), "whole": 100.0,
        ])
        #expect(text == #"{"big":\#(digits),"small":5e-324,"whole":100}"#)
        #expect(try JSONValue(parsing: Data(text.utf8))["big"] == .largeInteger(digits))
        for unstorable: JSONValue in [.double(.nan), .double(.infinity), .largeInteger("12a"), .largeInteger("")] {
            #expect(throws: ServerError.self) { try RecordBodyText.text(["x": ["y": unstorable]]) }
        }
    }

    @Test("the stored text of generated fields is JSONEncoder's, byte for byte")
    func generatedBodyTextMatches() throws {
        var generator = SeededGenerator(state: 12)
        for _ in 0..<500 {
            let fields = Self.object(&generator, depth: 0)
            #expect(try RecordBodyText.text(fields) == JSONValue.object(fields).jsonString())
        }
    }

    static func object(_ generator: inout SeededGenerator, depth: Int) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        for _ in 0..<generator.next(below: 6) {
            fields[string(&generator)] = value(&generator, depth: depth + 1)
        }
        return fields
    }

    static func value(_ generator: inout SeededGenerator, depth: Int) -> JSONValue {
        switch generator.next(below: depth > 3 ? 5 : 7) {
        case 0: return .null
        case 1: return .bool(generator.next(below: 2) == 0)
        case 2: return .int(Int(truncatingIfNeeded: generator.next()) >> Int(generator.next(below: 64)))
        case 3: return .string(string(&generator))
        case 4: return generator.next(below: 8) == 0 ? .double(Double(generator.next(below: 1000)) / 8) : .string("")
        case 5: return .array((0..<generator.next(below: 4)).map { _ in value(&generator, depth: depth + 1) })
        default: return .object(object(&generator, depth: depth))
        }
    }

    /// Up to 8 characters drawn from ASCII (controls and quotes included) and a few multi-byte ones.
    static func string(_ generator: inout SeededGenerator) -> String {
        let extra: [Unicode.Scalar] = ["é", "\u{301}", "ß", "😀", "\u{2028}", "\u{7f}", "ﬁ"]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<generator.next(below: 9) {
            let pick = generator.next(below: 140)
            if pick < 128 {
                scalars.append(Unicode.Scalar(UInt8(pick)))
            } else {
                scalars.append(extra[Int(pick - 128) % extra.count])
            }
        }
        return String(scalars)
    }
}
