import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import Testing

@testable import OutpostServer

extension StorageConformanceTests {
    @Test(
        "A list page's text (SQLite writes it from the rows) is the same bytes as the page built from its records",
        arguments: backends)
    func listPageText(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let bodies: [[String: JSONValue]] = [
                [:], ["nul": "a\u{0}b", "emoji": "🦜"], ["quote": "\"\\/", "line": "a\nb"], ["n": 12_345_678_901_234],
                ["nested": ["a": [1, 2, ["b": .null]]]], ["x": 1.5], [:],
            ]
            for (index, fields) in bodies.enumerated() {
                _ = try await storage.createRecord(type: "pages", fields: fields, owner: index == 2 ? "u_b" : nil)
            }
            _ = try await storage.createRecord(type: "pages", fields: ["hidden": true], owner: "u_b", isPrivate: true)
            _ = try await storage.createRecord(type: "other", fields: ["i": 1], owner: nil)

            var compared = 0
            for sort in RecordSort.allCases {
                for limit in [1, 3, 20] {
                    for viewer in [nil, "u_b"] as [String?] {
                        let query = RecordQuery(type: "pages", sort: sort, limit: limit, viewer: viewer)
                        let all = try await storage.listRecords(
                            RecordQuery(type: "pages", sort: sort, limit: 50, viewer: viewer), from: nil, backwards: false)
                        let positions: [RecordPosition?] =
                            [nil]
                            + all.map {
                                RecordPosition(time: sort.column == "created_at" ? $0.createdAt : $0.updatedAt, seq: $0.seq)
                            }
                        for position in positions {
                            for backwards in [false, true] {
                                let rows = try await storage.listRecords(query, from: position, backwards: backwards)
                                let expected = RecordPageText(rows: rows, limit: limit, backwards: backwards)
                                let page = try await storage.listRecordText(query, from: position, backwards: backwards)
                                #expect(page == expected, "sort \(sort), limit \(limit), backwards \(backwards)")
                                // The text is the records' own wire text, in page order.
                                let parsed = try JSONValue(
                                    parsing: Data(("[" + String(decoding: page.text, as: UTF8.self) + "]").utf8))
                                #expect(parsed.arrayValue?.compactMap { $0["id"]?.stringValue } == page.records.map(\.id))
                                compared += 1
                            }
                        }
                    }
                }
            }
            #expect(compared > 100)
        }
    }
}
