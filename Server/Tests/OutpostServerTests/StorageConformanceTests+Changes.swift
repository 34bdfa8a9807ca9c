import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import Synchronization
import Testing

@testable import OutpostServer

/// The change feed's storage side (``ChangeFeedStorage``) on every backend.
extension StorageConformanceTests {
    func feed(_ storage: any Storage) throws -> any ChangeFeedStorage {
        try #require(storage as? any ChangeFeedStorage, "\(type(of: storage)) keeps no change feed")
    }

    @Test("Change feed: every record write records one change, in order, with its record", arguments: backends)
    func changeRows(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let feed = try feed(storage)
            #expect(try await feed.changeBounds() == ChangeBounds(prunedThrough: 0, latest: 0))
            let note = try await storage.createRecord(type: "notes", fields: ["t": "a"], owner: "u_1", isPrivate: true)
            _ = try await storage.createRecord(type: "other", fields: [:], owner: nil)
            _ = try await storage.replaceRecord(type: "notes", id: note.id, fields: ["t": "b"], expectedVersion: 1)
            _ = try await storage.updateRecord(type: "notes", id: note.id, expectedVersion: 2) { _ in ["t": "c"] }
            try await storage.deleteRecord(type: "notes", id: note.id, expectedVersion: 3)

            let all = try await feed.changes(type: nil, after: 0, limit: 100)
            #expect(all.map(\.record.type) == ["notes", "other", "notes", "notes", "notes"])
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.position < $1.position })
            let notes = try await feed.changes(type: "notes", after: 0, limit: 100)
            #expect(notes.map(\.kind) == [.created, .updated, .updated, .deleted])
            #expect(notes.map(\.record.version) == [1, 2, 3, 3])
            // A deletion keeps the record's last fields, for the access rules that decide who sees it.
            #expect(notes.map(\.record.body) == [#"{"t":"a"}"#, #"{"t":"b"}"#, #"{"t":"c"}"#, #"{"t":"c"}"#])
            #expect(notes.allSatisfy { $0.record.id == note.id && $0.record.owner == "u_1" && $0.record.isPrivate })
            #expect(notes.allSatisfy { $0.at > 0 })
            // Paging by position: a limit, then on from the last one seen.
            let first = try await feed.changes(type: "notes", after: 0, limit: 2)
            #expect(first.map(\.position) == Array(notes.prefix(2).map(\.position)))
            let rest = try await feed.changes(type: "notes", after: first[1].position, limit: 100)
            #expect(rest.map(\.position) == Array(notes.dropFirst(2).map(\.position)))
            #expect(try await feed.changeBounds().latest == all.last?.position)
        }
    }

    @Test("Change feed: a deletion is shown to whom the rules showed the record as it was", arguments: backends)
    func deletionVisibility(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let feed = try feed(storage)
            let draft = try await storage.createRecord(type: "posts", fields: ["status": "draft"], owner: "u_1")
            let published = try await storage.createRecord(type: "posts", fields: ["status": "published"], owner: "u_1")
            try await storage.deleteRecord(type: "posts", id: draft.id, expectedVersion: nil)
            try await storage.deleteRecord(type: "posts", id: published.id, expectedVersion: nil)
            let rules = AccessRules([
                StoredRule(
                    type: "posts", operation: "read", expression: #"record.status != "draft" || record.owner == caller.user"#,
                    updatedAt: 0)
            ])
            let deletions = try await feed.changes(type: "posts", after: 0, limit: 10).filter { $0.kind == .deleted }
            #expect(deletions.map(\.record.id) == [draft.id, published.id])
            let anonymous = deletions.filter { $0.isVisible(to: .anonymous, under: rules) }.map(\.record.id)
            #expect(anonymous == [published.id])
            let owner = RuleCaller(signedIn: true, user: "u_1")
            #expect(deletions.filter { $0.isVisible(to: owner, under: rules) }.count == 2)
            // The event itself never carries the deleted fields.
            #expect(deletions.allSatisfy { !$0.eventData.contains("status") })
        }
    }

    @Test("Change feed: a write that fails or is refused records no change", arguments: backends)
    func noChangeWithoutWrite(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let feed = try feed(storage)
            let record = try await storage.createRecord(type: "t", fields: ["a": 1], owner: nil)
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                _ = try await storage.updateRecord(type: "t", id: record.id, expectedVersion: nil) { _ in throw Refused() }
            }
            await #expect(throws: RecordWriteFailure.self) {
                _ = try await storage.replaceRecord(type: "t", id: record.id, fields: [:], expectedVersion: 9)
            }
            await #expect(throws: RecordWriteFailure.self) {
                try await storage.deleteRecord(type: "t", id: record.id, expectedVersion: 9)
            }
            #expect(try await feed.changes(type: nil, after: 0, limit: 10).map(\.kind) == [.created])
        }
    }

    @Test("Change feed: retention removes a prefix; bounds keep the newest position handed out", arguments: backends)
    func changeRetention(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let feed = try feed(storage)
            for index in 0..<3 { _ = try await storage.createRecord(type: "r", fields: ["i": .int(index)], owner: nil) }
            let written = try await feed.changes(type: nil, after: 0, limit: 10)
            #expect(try await feed.pruneChanges(writtenBefore: 0) == 0)
            // Everything so far is older than a cutoff a minute ahead.
            let cutoff = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
            #expect(try await feed.pruneChanges(writtenBefore: cutoff) == 3)
            let last = try #require(written.last?.position)
            #expect(try await feed.changeBounds() == ChangeBounds(prunedThrough: last, latest: last))
            #expect(try await feed.changes(type: nil, after: 0, limit: 10).isEmpty)
            let next = try await storage.createRecord(type: "r", fields: [:], owner: nil)
            let after = try await feed.changes(type: nil, after: last, limit: 10)
            #expect(after.map(\.record.id) == [next.id])
            #expect(after.first.map { $0.position > last } == true)
        }
    }

    @Test(
        "Change feed: under concurrent writes from two instances, a reader that moves past what it saw misses nothing",
        arguments: backends)
    func changesVisibleInOrder(_ backend: ScratchDatabase.Backend) async throws {
        // 8 writers on two SQLite connections to one file take turns at its lock: on a loaded
        // machine a turn can take longer than the server's 5 s default, which is not what this tests.
        try await withStorage(backend, busyTimeout: .seconds(60)) { storage, database in
            let other = try await database.open(busyTimeout: .seconds(60))
            let feed = try feed(storage)
            let writers = 8
            let perWriter = 25
            let done = FinishedWriters()
            // The reader keeps only what is after the newest position it saw, as the server's feed
            // does: a change that became visible after a later one would be skipped.
            let reader = Task {
                var head: Int64 = 0
                var seen: [Int64] = []
                while true {
                    let finished = done.count.withLock { $0 } == writers
                    let batch = try await feed.changes(type: nil, after: head, limit: 500)
                    seen += batch.map(\.position)
                    head = batch.last?.position ?? head
                    if finished && batch.isEmpty { return seen }
                    if batch.isEmpty { await Task.yield() }
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    let target: any Storage = writer.isMultiple(of: 2) ? storage : other
                    group.addTask {
                        for index in 0..<perWriter {
                            let record = try await target.createRecord(type: "w", fields: ["i": .int(index)], owner: nil)
                            if index.isMultiple(of: 5) {
                                _ = try await target.updateRecord(type: "w", id: record.id, expectedVersion: nil) { _ in
                                    ["i": .int(-index)]
                                }
                            }
                        }
                        done.count.withLock { $0 += 1 }
                    }
                }
                try await group.waitForAll()
            }
            let seen = try await reader.value
            let stored = try await feed.changes(type: nil, after: 0, limit: 10_000).map(\.position)
            #expect(stored.count == writers * perWriter * 6 / 5)
            #expect(seen == stored)
            try await other.close()
        }
    }
}

/// How many writers of a concurrent test are done.
final class FinishedWriters: Sendable {
    let count = Mutex(0)
}
