import Foundation
import Logging
import OutpostCore
import OutpostTestSupport
import PostgresNIO
import Testing

@testable import OutpostServer

/// Record inserts on the lean PostgreSQL connections (`PostgresWireInserts`).
@Suite(
    "PostgreSQL lean inserts", .closesWhatItOpens,
    .enabled(
        if: ScratchDatabase.postgresRequired || ScratchDatabase.postgresBase != nil, "\(ScratchDatabase.postgresSkipReason ?? "")"
    ))
struct PostgresWireInsertTests {
    func withPostgres(_ body: (PostgresStorage) async throws -> Void) async throws {
        try await StorageConformanceTests().withStorage(.postgres) { storage, _ in
            try await body(try #require(storage as? PostgresStorage))
        }
    }

    /// The sessions of the lean insert connections to the storage's database, with their last statement.
    func insertSessions(_ storage: PostgresStorage) async throws -> [(pid: Int32, query: String)] {
        let rows = try await storage.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT pid, query FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = '\(PostgresWireInserts.applicationName)'
                    """))
        return try rows.map { (try $0["pid"].decode(Int32.self), try $0["query"].decode(String.self)) }
    }

    @Test("A record is inserted on a lean connection, committed, and equals what postgres-nio reads back, every column")
    func insertedOnLeanConnection() async throws {
        try await withPostgres { storage in
            let inserts = try #require(storage.inserts, "the test database (no TLS required, trust) takes the lean path")
            #expect(inserts.openConnections == inserts.lean.connections.count)
            let records = [
                try await storage.createRecord(
                    type: "items", fields: ["text": "héllo \u{1F600}", "n": -3, "list": [1, nil, "x"]], owner: nil),
                try await storage.createRecord(type: "items", fields: [:], owner: "u_a", isPrivate: true),
                try await storage.createRecord(
                    type: "items", fields: ["big": .string(String(repeating: "x", count: 100_000))], owner: "u_b"),
            ]
            for record in records {
                let pooled = try #require(try await storage.rows(PostgresStorage.RecordByID(type: "items", id: record.id)).first)
                #expect(pooled == record)
                #expect(record.version == 1 && record.createdAt == record.updatedAt)
            }
            #expect(records[1].isPrivate && records[1].owner == "u_a" && !records[0].isPrivate)
            // The sessions that ran them are the lean ones: their last statement is the insert.
            let sessions = try await insertSessions(storage)
            #expect(sessions.count == inserts.lean.connections.count)
            #expect(sessions.contains { $0.query.contains("INSERT INTO records") })
            // Each insert wrote its change row in the same commit.
            let changes = try await storage.changes(type: "items", after: 0, limit: 10)
            #expect(changes.map(\.record.id) == records.map(\.id))
            #expect(changes.allSatisfy { $0.kind == .created })
        }
    }

    @Test("A lean insert connection ended by pg_terminate_backend: at most one 503 storage_unavailable, then inserts succeed")
    func terminatedConnection() async throws {
        try await withPostgres { storage in
            _ = try await storage.createRecord(type: "items", fields: ["n": 0], owner: nil)
            let before = Set(try await insertSessions(storage).map(\.pid))
            #expect(!before.isEmpty)
            let ended = try await storage.rows(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT pg_terminate_backend(pid, 10000) AS ended FROM pg_stat_activity
                        WHERE datname = current_database() AND application_name = '\(PostgresWireInserts.applicationName)'
                        """))
            #expect(try ended.map { try $0["ended"].decode(Bool.self) } == Array(repeating: true, count: before.count))
            var failures = 0
            var created: [StoredRecord] = []
            while created.count < 2 {
                do {
                    created.append(
                        try await storage.createRecord(type: "items", fields: ["n": .int(created.count + 1)], owner: nil))
                } catch let error as ServerError {
                    failures += 1
                    #expect(error.status == .serviceUnavailable && error.code == "storage_unavailable")
                    #expect(failures == 1, "only the first insert after the loss fails")
                    if failures > 1 { break }
                }
            }
            // What failed was not inserted; what succeeded was, once.
            let page = try await storage.listRecords(RecordQuery(type: "items", limit: 10), from: nil, backwards: false)
            #expect(page.count == 3)
            #expect(Set(page.map(\.id)).isSuperset(of: created.map(\.id)))
            let after = Set(try await insertSessions(storage).map(\.pid))
            #expect(!after.isEmpty && after.isDisjoint(with: before), "new sessions replaced the ended ones")
        }
    }

    @Test("Closing the storage ends the lean insert connections")
    func closeEndsConnections() async throws {
        try await StorageConformanceTests().withStorage(.postgres) { _, database in
            let second = try #require(try await database.open() as? PostgresStorage)
            let inserts = try #require(second.inserts)
            #expect(inserts.openConnections == inserts.lean.connections.count)
            try await second.close()
            #expect(inserts.openConnections == 0)
            await #expect(throws: ServerError.self) {
                _ = try await inserts.insert(
                    PostgresStorage.InsertRecord(type: "items", id: "x", owner: nil, body: "{}", now: 1, isPrivate: false))
            }
        }
    }
}
