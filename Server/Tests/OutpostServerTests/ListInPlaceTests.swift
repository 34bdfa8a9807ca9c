import Dispatch
import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// List pages read in place on the caller's thread when a reader is free, within a bound on the
/// rows they walk, and through a reader's thread otherwise (readers busy, too many rows skipped,
/// another process's lock).
@Suite("SQLite list pages in place", .closesWhatItOpens)
struct ListInPlaceTests {
    /// A migrated storage (busy timeout `busyTimeout`), closed afterwards.
    func withStorage(busyTimeout: Duration = .seconds(5), _ body: (SQLiteStorage, String) async throws -> Void) async throws {
        try await SQLiteStorageTests.withDatabase { path in
            let storage = try await SQLiteStorage.open(path: path, busyTimeout: busyTimeout, logger: Logger(label: "test"))
            do {
                try await storage.migrate()
                try await body(storage, path)
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }

    /// The page as the records-based default writes it (the reference for the page's bytes).
    static func expected(
        _ storage: SQLiteStorage, _ query: RecordQuery, from position: RecordPosition? = nil, backwards: Bool = false
    )
        async throws -> RecordPageText
    {
        RecordPageText(
            rows: try await storage.listRecords(query, from: position, backwards: backwards), limit: query.limit,
            backwards: backwards)
    }

    static func trips(_ storage: SQLiteStorage) -> (onThread: Int, inPlace: Int) {
        ReaderTripTests.trips(storage)
    }

    @Test("a list page runs in place when a reader is free: no trip to a connection's thread, the same bytes")
    func pageInPlace() async throws {
        try await withStorage { storage, _ in
            for index in 0..<25 {
                _ = try await storage.createRecord(type: "notes", fields: ["n": .int(index)], owner: nil, isPrivate: false)
            }
            let query = RecordQuery(type: "notes", limit: 20)
            let before = Self.trips(storage)
            let page = try await storage.listRecordText(query, from: nil, backwards: false)
            let after = Self.trips(storage)
            #expect(after.inPlace == before.inPlace + 1)
            #expect(after.onThread == before.onThread)
            #expect(page.records.count == 20 && page.more)
            #expect(page == (try await Self.expected(storage, query)))
        }
    }

    @Test("a page that skips more rows than the in-place budget is finished on a reader's thread, complete and in order")
    func tooManySkipped() async throws {
        try await withStorage { storage, _ in
            let limit = 5
            let budget = SQLiteStorage.inPlaceRowBudget(limit: limit)
            // Three public records, then more private records of another user than the budget,
            // then three public records: a stranger's first page must reach past the private ones.
            var publicIDs: [String] = []
            for index in 0..<3 {
                publicIDs.append(
                    try await storage.createRecord(type: "mixed", fields: ["n": .int(index)], owner: nil, isPrivate: false).id)
            }
            for index in 0..<budget {
                _ = try await storage.createRecord(type: "mixed", fields: ["p": .int(index)], owner: "u_owner", isPrivate: true)
            }
            for index in 3..<6 {
                publicIDs.append(
                    try await storage.createRecord(type: "mixed", fields: ["n": .int(index)], owner: nil, isPrivate: false).id)
            }
            for backwards in [false, true] {
                // Forwards from the start; backwards from beyond the last record.
                let position = backwards ? RecordPosition(time: Int64.max, seq: Int64.max) : nil
                let query = RecordQuery(type: "mixed", limit: limit, viewer: nil)
                let before = Self.trips(storage)
                let page = try await storage.listRecordText(query, from: position, backwards: backwards)
                let after = Self.trips(storage)
                #expect(after.onThread == before.onThread + 1, "the in-place attempt gave up and the page went to a thread")
                #expect(page == (try await Self.expected(storage, query, from: position, backwards: backwards)))
                #expect(page.records.map(\.id) == (backwards ? Array(publicIDs.suffix(5)) : Array(publicIDs.prefix(5))))
                #expect(page.more)
            }
            // The owner skips nothing: in place.
            let own = RecordQuery(type: "mixed", limit: limit, viewer: "u_owner")
            let before = Self.trips(storage)
            let page = try await storage.listRecordText(own, from: nil, backwards: false)
            #expect(Self.trips(storage).onThread == before.onThread)
            #expect(page == (try await Self.expected(storage, own)))
            // A filter that leaves out more rows than the budget: the same way.
            let filtered = RecordQuery(type: "mixed", filters: [("n", .int(4))], limit: limit)
            let beforeFiltered = Self.trips(storage)
            let found = try await storage.listRecordText(filtered, from: nil, backwards: false)
            #expect(Self.trips(storage).onThread == beforeFiltered.onThread + 1)
            #expect(found.records.map(\.id) == [publicIDs[4]])
            #expect(!found.more)
        }
    }

    @Test("a page that skips fewer rows than the budget stays in place and leaves out what it must")
    func fewSkipped() async throws {
        try await withStorage { storage, _ in
            var shown: [String] = []
            for index in 0..<12 {
                let record = try await storage.createRecord(
                    type: "few", fields: ["n": .int(index), "even": .bool(index.isMultiple(of: 2))], owner: "u_a",
                    isPrivate: !index.isMultiple(of: 3))
                if index.isMultiple(of: 3) { shown.append(record.id) }
            }
            let query = RecordQuery(type: "few", limit: 3, viewer: "u_b")
            let before = Self.trips(storage)
            let page = try await storage.listRecordText(query, from: nil, backwards: false)
            let filtered = RecordQuery(type: "few", filters: [("even", .bool(true))], limit: 3, viewer: "u_b")
            let evens = try await storage.listRecordText(filtered, from: nil, backwards: false)
            #expect(Self.trips(storage).onThread == before.onThread)
            #expect(Self.trips(storage).inPlace == before.inPlace + 2)
            #expect(page.records.map(\.id) == Array(shown.prefix(3)) && page.more)
            #expect(page == (try await Self.expected(storage, query)))
            // Public and even: 0 and 6.
            #expect(evens.records.map(\.id) == [shown[0], shown[2]] && !evens.more)
            #expect(evens == (try await Self.expected(storage, filtered)))
        }
    }

    @Test("with every reader busy, a list page waits its turn on a reader's thread and answers once one is free")
    func readersBusy() async throws {
        try await withStorage { storage, _ in
            let record = try await storage.createRecord(type: "notes", fields: ["a": 1], owner: nil, isPrivate: false)
            let release = DispatchSemaphore(value: 0)
            let (entered, enteredContinuation) = AsyncStream.makeStream(of: Int.self)
            var iterator = entered.makeAsyncIterator()
            var holds: [Task<Void, any Error>] = []
            for index in storage.readers.indices {
                holds.append(
                    Task {
                        _ = try await storage.readers[index].read("SELECT 1", []) { _ in
                            enteredContinuation.yield(index)
                            release.wait()
                            return 0
                        }
                    })
                _ = await iterator.next()
            }
            let before = Self.trips(storage)
            let waiting = Task { try await storage.listRecordText(RecordQuery(type: "notes"), from: nil, backwards: false) }
            // Released once the page has gone to a thread (only the count says so: polled, with a deadline).
            _ = try await eventually(within: .seconds(20), every: .milliseconds(1)) {
                Self.trips(storage).onThread != before.onThread
            }
            #expect(Self.trips(storage).onThread == before.onThread + 1)
            for _ in holds { release.signal() }
            for hold in holds { try await hold.value }
            let page = try await waiting.value
            #expect(page.records.map(\.id) == [record.id])
            #expect(Self.trips(storage).inPlace == before.inPlace)
            enteredContinuation.finish()
        }
    }

    @Test("another process holding the write lock: list pages and record reads still answer, in place")
    func writeLockHeldElsewhere() async throws {
        try await withStorage(busyTimeout: .milliseconds(300)) { storage, path in
            let record = try await storage.createRecord(type: "notes", fields: ["a": 1], owner: nil, isPrivate: false)
            let other = try await SQLiteHandle.open(path: path)
            do {
                _ = try await other.query("BEGIN IMMEDIATE", [])
                _ = try await other.query("INSERT INTO settings (key, value) VALUES ('held', x'00')", [])
                let before = Self.trips(storage)
                let page = try await storage.listRecordText(RecordQuery(type: "notes"), from: nil, backwards: false)
                #expect(page.records.map(\.id) == [record.id])
                #expect(try await storage.record(type: "notes", id: record.id) == record)
                // Writes wait for the lock and fail after the busy timeout.
                await #expect(throws: ServerError.self) {
                    _ = try await storage.createRecord(type: "notes", fields: [:], owner: nil, isPrivate: false)
                }
                let after = Self.trips(storage)
                #expect(after.inPlace == before.inPlace + 2)
                #expect(after.onThread == before.onThread)
                _ = try await other.query("ROLLBACK", [])
            } catch {
                try? await other.close()
                throw error
            }
            try await other.close()
        }
    }
}
