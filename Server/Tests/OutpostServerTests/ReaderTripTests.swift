import Dispatch
import Foundation
import Logging
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// How reads reach SQLite's read-only connections: without SQLite's per-connection mutex, and for
/// key lookups (a token, a record) in place on the caller's thread instead of a trip to the
/// connection's thread and back.
@Suite("SQLite reads in place", .closesWhatItOpens)
struct ReaderTripTests {
    /// A migrated storage with one record and one access token, closed afterwards.
    func withStorage(_ body: (SQLiteStorage, StoredRecord, StoredToken) async throws -> Void) async throws {
        try await SQLiteStorageTests.withDatabase { path in
            let storage = try await SQLiteStorage.open(path: path, logger: Logger(label: "test"))
            do {
                try await storage.migrate()
                let record = try await storage.createRecord(
                    type: "notes", fields: ["title": "hello"], owner: nil, isPrivate: false)
                let token = StoredToken(
                    hash: "hash-of-a-token", kind: .access, userID: "user-1", clientID: "outpost-cli", scope: "records",
                    family: "family-1", expiresAt: 4_000_000_000_000, state: "active")
                try await storage.saveToken(token)
                try await body(storage, record, token)
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }

    /// The readers' trips so far, summed.
    static func trips(_ storage: SQLiteStorage) -> (onThread: Int, inPlace: Int) {
        storage.readers.map(\.connection.trips).reduce((0, 0)) { ($0.0 + $1.onThread, $0.1 + $1.inPlace) }
    }

    @Test("every connection of a storage is opened in multi-thread mode, without SQLite's per-connection mutex")
    func noConnectionMutex() async throws {
        try await withStorage { storage, _, _ in
            let connections = [storage.connection, storage.writer] + storage.readers
            #expect(connections.count == 2 + SQLiteStorage.readerCount)
            for connection in connections {
                #expect(!connection.connection.isSerialized)
            }
            // The connections still work from any thread, one statement at a time.
            async let first = storage.record(type: "notes", id: "missing-1")
            async let second = storage.record(type: "notes", id: "missing-2")
            let found = try await [first, second]
            #expect(found == [nil, nil])
        }
    }

    @Test("a token lookup and a record read run in place: no trip to a connection's thread")
    func pointReadsInPlace() async throws {
        try await withStorage { storage, record, token in
            let before = Self.trips(storage)
            let found = try await storage.record(type: "notes", id: record.id)
            #expect(found == record)
            #expect(try await storage.record(type: "notes", id: "no-such-id") == nil)
            let stored = try #require(try await storage.token(hash: token.hash))
            #expect(stored.userID == "user-1" && stored.clientID == "outpost-cli" && stored.scope == "records")
            #expect(stored.expiresAt == token.expiresAt && stored.kind == .access && stored.state == "active")
            let after = Self.trips(storage)
            #expect(after.inPlace - before.inPlace == 3)
            #expect(after.onThread == before.onThread)
            // So does a list page that skips few rows (ListInPlaceTests has the others).
            _ = try await storage.listRecordText(RecordQuery(type: "notes", limit: 20), from: nil, backwards: false)
            #expect(Self.trips(storage).onThread == after.onThread)
            #expect(Self.trips(storage).inPlace == after.inPlace + 1)
        }
    }

    @Test("a point read takes a free reader when one is busy, and waits its turn on a thread when all are")
    func busyReaders() async throws {
        try await withStorage { storage, record, _ in
            let release = DispatchSemaphore(value: 0)
            let (entered, enteredContinuation) = AsyncStream.makeStream(of: Int.self)
            // Hold a reader: a statement whose row handler waits on the connection's thread.
            func hold(_ index: Int) -> Task<Void, any Error> {
                Task {
                    _ = try await storage.readers[index].read("SELECT 1", []) { _ in
                        enteredContinuation.yield(index)
                        release.wait()
                        return 0
                    }
                }
            }
            var iterator = entered.makeAsyncIterator()
            let holdFirst = hold(0)
            _ = await iterator.next()
            // A held reader is not free: nothing runs on it in place.
            #expect(try storage.readers[0].connection.readIfFree("SELECT 1", []) { _ in 1 } == nil)
            // Were reads to queue behind the held reader (not free ones in place), the test would
            // wait forever: this lets the holds go after a while and records the failure.
            let watchdog = Task {
                try await Task.sleep(for: .seconds(60))
                Issue.record("a read waited for a held reader instead of running in place on a free one")
                release.signal()
                release.signal()
            }
            defer { watchdog.cancel() }
            let before = storage.readers.map(\.connection.trips)
            // Whichever reader comes next in turn, the read runs in place on the free one.
            for _ in 0..<4 {
                #expect(try await storage.record(type: "notes", id: record.id) == record)
            }
            let after = storage.readers.map(\.connection.trips)
            #expect(after[0].inPlace == before[0].inPlace)
            #expect(after[1].inPlace == before[1].inPlace + 4)

            let holdSecond = hold(1)
            _ = await iterator.next()
            // Both busy: the read queues on a reader's thread and finishes once that reader is free.
            let queuedBefore = Self.trips(storage).onThread
            let waiting = Task { try await storage.record(type: "notes", id: record.id) }
            // Released only once the read has gone to a thread (nothing signals that but the
            // count, so it is polled, with a deadline).
            _ = try await eventually(within: .seconds(20), every: .milliseconds(1)) {
                Self.trips(storage).onThread != queuedBefore
            }
            release.signal()
            release.signal()
            try await holdFirst.value
            try await holdSecond.value
            #expect(try await waiting.value == record)
            #expect(Self.trips(storage).onThread == queuedBefore + 1)
            enteredContinuation.finish()
        }
    }

    @Test("a point read after the storage closed fails instead of touching the closed connection")
    func afterClose() async throws {
        try await SQLiteStorageTests.withDatabase { path in
            let storage = try await SQLiteStorage.open(path: path, logger: Logger(label: "test"))
            try await storage.migrate()
            let record = try await storage.createRecord(type: "notes", fields: [:], owner: nil, isPrivate: false)
            #expect(try await storage.record(type: "notes", id: record.id) == record)
            try await storage.close()
            await #expect(throws: (any Error).self) { try await storage.record(type: "notes", id: record.id) }
            await #expect(throws: (any Error).self) { try await storage.token(hash: "anything") }
        }
    }
}
