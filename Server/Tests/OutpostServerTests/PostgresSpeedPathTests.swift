import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// The PostgreSQL backend's fast paths give the same answers as the general ones: list pages by
/// prepared statement, and the change feed's order kept by readers (migration 3) instead of by
/// serialized writers.
@Suite(
    "PostgreSQL fast paths", .closesWhatItOpens,
    .enabled(
        if: ScratchDatabase.postgresRequired || ScratchDatabase.postgresBase != nil, "\(ScratchDatabase.postgresSkipReason ?? "")"
    ))
struct PostgresSpeedPathTests {
    func withPostgres(_ body: (PostgresStorage) async throws -> Void) async throws {
        try await StorageConformanceTests().withStorage(.postgres) { storage, _ in
            try await body(try #require(storage as? PostgresStorage))
        }
    }

    @Test("Every sort, direction, start and viewer: the prepared page equals the page built for the query")
    func preparedPages() async throws {
        try await withPostgres { storage in
            var created: [StoredRecord] = []
            for index in 0..<9 {
                created.append(
                    try await storage.createRecord(
                        type: "items", fields: ["i": .int(index)], owner: index.isMultiple(of: 3) ? "u_b" : "u_a",
                        isPrivate: index.isMultiple(of: 4)))
            }
            _ = try await storage.createRecord(type: "others", fields: [:], owner: nil, isPrivate: false)
            // Some updated later, so the two sort columns order differently.
            for record in [created[5], created[1], created[7]] {
                _ = try await storage.replaceRecord(type: "items", id: record.id, fields: ["i": 0], expectedVersion: 1)
            }
            var compared = 0
            for sort in RecordSort.allCases {
                for viewer in [nil, "u_a", "u_b"] {
                    let query = RecordQuery(type: "items", sort: sort, limit: 3, viewer: viewer)
                    let everything = try await storage.keysetPage(
                        RecordQuery(type: "items", sort: sort, limit: 50, viewer: viewer), from: nil, descending: sort.descending)
                    #expect(everything.count == (viewer == nil ? 6 : viewer == "u_a" ? 8 : 7))
                    let middle = everything[everything.count / 2]
                    let time = sort.column == "created_at" ? middle.createdAt : middle.updatedAt
                    for start in [nil, RecordPosition(time: time, seq: middle.seq)] {
                        for backwards in [false, true] {
                            let descending = sort.descending != backwards
                            let prepared = try await storage.keysetPage(query, from: start, descending: descending)
                            let built = try await storage.rows(
                                PostgresStorage.keysetStatement(query, from: start, descending: descending).query
                            ).map(PostgresStorage.record(from:))
                            #expect(!built.isEmpty)
                            #expect(
                                prepared.map(\.id) == built.map(\.id),
                                "\(sort) viewer \(viewer ?? "-") \(start == nil) \(backwards)")
                            #expect(prepared.map(\.version) == built.map(\.version))
                            compared += 1
                        }
                    }
                }
            }
            #expect(compared == 48)
            // A record read by position decodes every column.
            let read = try #require(try await storage.record(type: "items", id: created[4].id))
            #expect(read.owner == "u_a" && read.isPrivate && read.body == #"{"i":4}"# && read.seq == created[4].seq)
        }
    }

    @Test("A reader waits for a write that drew an earlier position: it never sees the later one first")
    func readersWaitForEarlierWriters() async throws {
        try await withPostgres { storage in
            let (opened, openedSignal) = AsyncStream.makeStream(of: Int64.self)
            let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
            // An open transaction that wrote a record: its change has drawn a position, not committed.
            let writer = Task {
                try await storage.withTransaction { connection in
                    let record = try await PostgresStorage.insertRecord(
                        type: "t", fields: ["n": 1], owner: nil, isPrivate: false, now: Identifiers.nowMilliseconds(),
                        on: connection)
                    openedSignal.yield(record.seq)
                    for await _ in release { break }
                }
            }
            var openedIterator = opened.makeAsyncIterator()
            _ = await openedIterator.next()
            // A later write commits meanwhile: writers no longer wait for each other.
            _ = try await storage.createRecord(type: "t", fields: ["n": 2], owner: nil, isPrivate: false)
            let reader = Task { try await storage.changes(type: nil, after: 0, limit: 10) }
            // The reader waits for the open writer (its lock request is queued behind the writer's).
            let waited = try await eventually(within: .seconds(20), every: .zero) {
                try await !storage.rows(
                    """
                    SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """
                ).isEmpty
            }
            #expect(waited, "the reader never waited for the open write")
            releaseSignal.yield()
            try await writer.value
            let changes = try await reader.value
            #expect(changes.map(\.record.body) == [#"{"n":1}"#, #"{"n":2}"#])
            #expect(changes.count == 2 && changes[0].position < changes[1].position)
            let bounds = try await storage.changeBounds()
            #expect(bounds.latest == changes.last?.position)
        }
    }

    @Test("A query from a task on an event loop runs on a connection of that loop (one pool per loop)")
    func queriesStayOnTheirLoop() async throws {
        try await withPostgres { storage in
            let loops = EventLoopTaskExecutor.shared.map(\.eventLoop)
            #expect(!loops.isEmpty)
            // The storage was opened with the default 20 connections: a pool per loop up to 10 loops.
            let perLoop = PostgresStorage.poolSizes(
                maxConnections: 20, loops: loops.count, processors: ProcessInfo.processInfo.activeProcessorCount
            ).perLoop
            #expect(storage.clients.count == (perLoop ? loops.count : 1))
            let created = try await storage.createRecord(type: "items", fields: ["n": 1], owner: nil, isPrivate: false)
            for loop in loops {
                let (sameLoop, read) = try await EventLoopTaskExecutor.run(on: loop) {
                    #expect(loop.inEventLoop)
                    let sameLoop = try await storage.client.withConnection { $0.eventLoop === loop }
                    // The hot statements run there too, and the task is still on the loop after them.
                    let read = try await storage.record(type: "items", id: created.id)
                    #expect(loop.inEventLoop)
                    return (sameLoop, read)
                }
                #expect(sameLoop || !perLoop)
                #expect(read?.body == #"{"n":1}"#)
            }
        }
    }

    @Test("Pool sizes: a pool per loop when the connections allow two per loop, else one pool")
    func poolSizes() {
        #expect(PostgresStorage.poolSizes(maxConnections: 20, loops: 2, processors: 2) == (true, 10, 4))
        #expect(PostgresStorage.poolSizes(maxConnections: 20, loops: 16, processors: 16) == (false, 20, 20))
        #expect(PostgresStorage.poolSizes(maxConnections: 64, loops: 16, processors: 16) == (true, 4, 4))
        #expect(PostgresStorage.poolSizes(maxConnections: 200, loops: 8, processors: 8) == (true, 25, 4))
        #expect(PostgresStorage.poolSizes(maxConnections: 1, loops: 2, processors: 2) == (false, 1, 1))
        #expect(PostgresStorage.poolSizes(maxConnections: 3, loops: 1, processors: 1) == (true, 3, 3))
    }
}
