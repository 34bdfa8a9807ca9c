import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Testing

@testable import OutpostServer

@Suite("SQLite statement reuse", .closesWhatItOpens)
struct StatementCacheTests {
    /// A database file in a fresh temporary folder, removed afterwards.
    func withDatabasePath(_ body: (String) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-statements-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder.appendingPathComponent("db.sqlite").path)
    }

    func withHandle(capacity: Int, _ body: (SQLiteHandle) async throws -> Void) async throws {
        try await withDatabasePath { path in
            let handle = try await SQLiteHandle.open(path: path, capacity: capacity)
            do {
                try await body(handle)
            } catch {
                try? await handle.close()
                throw error
            }
            try await handle.close()
        }
    }

    @Test("a query run again reuses its prepared statement, with the new bindings")
    func reuse() async throws {
        try await withHandle(capacity: 8) { handle in
            _ = try await handle.query("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)", [])
            for key in 1...5 {
                _ = try await handle.query("INSERT INTO t (k, v) VALUES (?, ?)", [.integer(key), .text("value \(key)")])
            }
            let before = handle.statistics
            for key in [3, 1, 5] {
                let rows = try await handle.query("SELECT k, v FROM t WHERE k = ?", [.integer(key)])
                #expect(rows.count == 1)
                #expect(rows.first?.column("v")?.string == "value \(key)")
                #expect(rows.first?.column("k")?.integer == key)
                #expect(rows.first?.column("missing") == nil)
            }
            let after = handle.statistics
            // The INSERT was prepared once for five runs; the SELECT once for three.
            #expect(before.prepared == 2 && before.reused == 4)
            #expect(after.prepared - before.prepared == 1)
            #expect(after.reused - before.reused == 2)
            #expect(after.kept == 3)
        }
    }

    @Test("the cache keeps at most its capacity, finalizing the least recently used statement")
    func bounded() async throws {
        try await withHandle(capacity: 4) { handle in
            for number in 0..<10 {
                let rows = try await handle.query("SELECT \(number) AS n", [])
                #expect(rows.first?.column("n")?.integer == number)
                #expect(handle.statistics.kept <= 4)
            }
            #expect(handle.statistics.evicted == 6)
            #expect(handle.statistics.kept == 4)
            // The most recent four are still kept; the first was finalized and is prepared again.
            let prepared = handle.statistics.prepared
            _ = try await handle.query("SELECT 9 AS n", [])
            #expect(handle.statistics.prepared == prepared)
            _ = try await handle.query("SELECT 0 AS n", [])
            #expect(handle.statistics.prepared == prepared + 1)
            #expect(handle.statistics.kept == 4)
        }
    }

    @Test("concurrent runs of one query each get a statement of their own, and one is kept")
    func concurrent() async throws {
        try await withHandle(capacity: 4) { handle in
            _ = try await handle.query("CREATE TABLE t (k INTEGER PRIMARY KEY)", [])
            _ = try await handle.query("INSERT INTO t (k) VALUES (1), (2), (3)", [])
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<32 {
                    group.addTask { try await handle.query("SELECT k FROM t ORDER BY k", []).count }
                }
                for try await count in group { #expect(count == 3) }
            }
            #expect(handle.statistics.kept <= 4)
            let select = handle.statistics
            #expect(select.prepared + select.reused == 34)
        }
    }

    @Test("queries that race the close fail with a closed-connection error and never touch the closed handle")
    func queriesRacingClose() async throws {
        for _ in 0..<20 {
            try await withDatabasePath { path in
                let handle = try await SQLiteHandle.open(path: path, capacity: 4)
                _ = try await handle.query("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)", [])
                let outcomes = await withTaskGroup(of: Result<Int, any Error>.self) { group in
                    for key in 0..<64 {
                        group.addTask {
                            do {
                                _ = try await handle.query(
                                    "INSERT INTO t (k, v) VALUES (?, ?)", [.integer(key), .text("value \(key)")])
                                return .success(try await handle.query("SELECT v FROM t WHERE k = ?", [.integer(key)]).count)
                            } catch {
                                return .failure(error)
                            }
                        }
                    }
                    group.addTask {
                        do {
                            try await handle.close()
                            return .success(-1)
                        } catch {
                            return .failure(error)
                        }
                    }
                    var outcomes: [Result<Int, any Error>] = []
                    for await outcome in group { outcomes.append(outcome) }
                    return outcomes
                }
                #expect(outcomes.count == 65)
                for outcome in outcomes {
                    switch outcome {
                    case .success(let count): #expect(count == 1 || count == -1)
                    case .failure(let error):
                        // Either the pool had stopped, or the connection was closed before the query ran.
                        if let failure = error as? SQLiteFailure { #expect(failure.isClosed, "\(failure)") }
                    }
                }
            }
        }
    }

    @Test("a failed statement reports SQLite's code and stays usable")
    func failure() async throws {
        try await withHandle(capacity: 4) { handle in
            _ = try await handle.query("CREATE TABLE t (k TEXT NOT NULL UNIQUE)", [])
            let insert = "INSERT INTO t (k) VALUES (?)"
            _ = try await handle.query(insert, [.text("a")])
            let error = try await #require(throws: SQLiteFailure.self) {
                _ = try await handle.query(insert, [.text("a")])
            }
            #expect(error.isUniqueConstraint)
            #expect(!error.isBusy)
            _ = try await handle.query(insert, [.text("b")])
            #expect(try await handle.query("SELECT count(*) AS n FROM t", []).first?.column("n")?.integer == 2)
            #expect(handle.statistics.reused >= 2)
        }
    }

    @Test("record reads through the storage reuse the readers' statements")
    func storageReads() async throws {
        try await withDatabasePath { path in
            let storage = try await SQLiteStorage.open(path: path, logger: Logger(label: "test"))
            do {
                try await storage.migrate()
                let record = try await storage.createRecord(type: "note", fields: ["n": .int(1)], owner: nil, isPrivate: false)
                func readerTotals() -> (prepared: Int, reused: Int) {
                    storage.readers.map(\.connection.statistics).reduce((0, 0)) { ($0.0 + $1.prepared, $0.1 + $1.reused) }
                }
                let before = readerTotals()
                for _ in 0..<10 {
                    #expect(try await storage.record(type: "note", id: record.id)?.id == record.id)
                }
                let after = readerTotals()
                // Two readers, taken in turn: each prepares the statement once at most.
                #expect(after.prepared - before.prepared <= storage.readers.count)
                #expect(after.reused - before.reused >= 10 - storage.readers.count)
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }
}

@Suite("Statement cache bookkeeping", .closesWhatItOpens)
struct StatementCacheBookkeepingTests {
    /// Stand-ins for statements: the cache only stores and returns them.
    static func fake(_ number: Int) -> RawPointer { RawPointer(OpaquePointer(bitPattern: 0x1000 * (number + 1))!) }

    @Test("copies of a statement used at once are kept up to a limit; closing returns the kept ones")
    func copies() {
        var cache = StatementCache(capacity: 8, copiesPerStatement: 2)
        #expect(cache.take("a") == nil)  // first run: prepare
        #expect(cache.take("a") == nil)  // concurrent runs: prepare more copies
        #expect(cache.take("a") == nil)
        #expect(cache.put("a", Self.fake(1)) == nil)
        #expect(cache.put("a", Self.fake(2)) == nil)
        #expect(cache.put("a", Self.fake(3))?.pointer == Self.fake(3).pointer)  // a third copy is not kept
        #expect(cache.take("a") != nil)
        #expect(cache.put("b", Self.fake(4)) == nil)
        #expect(cache.statistics == .init(reused: 1, prepared: 3, evicted: 1, kept: 2))
        let finalized = Set(cache.close().map { Int(bitPattern: $0.pointer) })
        #expect(finalized.count == 2 && finalized.contains(Int(bitPattern: Self.fake(4).pointer)))
        #expect(cache.put("c", Self.fake(5))?.pointer == Self.fake(5).pointer)
        #expect(cache.statistics.kept == 0)
    }

    @Test("over capacity, the least recently used SQL text gives up a statement")
    func eviction() {
        var cache = StatementCache(capacity: 2, copiesPerStatement: 2)
        _ = cache.take("old")
        #expect(cache.put("old", Self.fake(1)) == nil)
        _ = cache.take("new")
        _ = cache.take("new")
        #expect(cache.put("new", Self.fake(2)) == nil)
        #expect(cache.put("new", Self.fake(3))?.pointer == Self.fake(1).pointer)
        #expect(cache.statistics.kept == 2)
        #expect(cache.take("old") == nil)
        #expect(cache.take("new") != nil)
    }
}
