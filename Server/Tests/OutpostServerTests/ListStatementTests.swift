import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("SQLite list statements are reused, not prepared again", .closesWhatItOpens)
struct ListStatementTests {
    @Test("a bound LIMIT makes SQLite prepare a kept statement again on every run (what the list query avoids)")
    func boundLimitReprepares() async throws {
        try await withStorage { storage in
            let handle = storage.connection.connection
            let before = handle.statistics.reprepared
            for limit in [3, 3, 4] {
                _ = try await handle.query(
                    "SELECT seq FROM records WHERE type = ? ORDER BY seq LIMIT ?", [.text("t"), .integer(limit)])
            }
            #expect(handle.statistics.reprepared - before >= 2)
        }
    }

    @Test("keyset pages, written as text or as records, reuse their statements without SQLite preparing them again")
    func listPagesReuse() async throws {
        try await withStorage { storage in
            for index in 0..<30 {
                _ = try await storage.createRecord(type: "t", fields: ["i": .int(index)], owner: nil)
            }
            func counts() -> (reused: Int, reprepared: Int) {
                storage.readers.reduce((0, 0)) { total, reader in
                    let statistics = reader.connection.statistics
                    return (total.0 + statistics.reused, total.1 + statistics.reprepared)
                }
            }
            let before = counts()
            let query = RecordQuery(type: "t", limit: 5)
            var position: RecordPosition?
            var seen: [String] = []
            for _ in 0..<6 {
                let page = try await storage.listRecordText(query, from: position, backwards: false)
                seen += page.records.map(\.id)
                let rows = try await storage.listRecords(query, from: position, backwards: false)
                #expect(Array(rows.prefix(5).map(\.id)) == page.records.map(\.id))
                guard let last = page.records.last else { break }
                position = RecordPosition(time: last.createdAt, seq: last.seq)
            }
            #expect(seen.count == 30 && Set(seen).count == 30)
            let after = counts()
            #expect(after.reused - before.reused >= 8)
            #expect(after.reprepared == before.reprepared)
        }
    }

    @Test("record and token reads by key reuse their statements without SQLite preparing them again")
    func pointReadsReuse() async throws {
        try await withStorage { storage in
            var ids: [String] = []
            for index in 0..<4 {
                ids.append(try await storage.createRecord(type: "t", fields: ["i": .int(index)], owner: nil).id)
            }
            func reprepared() -> Int { storage.readers.reduce(0) { $0 + $1.connection.statistics.reprepared } }
            let before = reprepared()
            for id in ids + ids {
                #expect(try await storage.record(type: "t", id: id)?.id == id)
                #expect(try await storage.token(hash: Secrets.hash(id)) == nil)
            }
            #expect(reprepared() == before)
        }
    }

    func withStorage(_ body: (SQLiteStorage) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-lists-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var logger = Logger(label: "outpost.test.lists")
        logger.logLevel = .critical
        let storage = try await SQLiteStorage.open(path: folder.appendingPathComponent("db.sqlite").path, logger: logger)
        do {
            try await storage.migrate()
            try await body(storage)
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
    }
}
