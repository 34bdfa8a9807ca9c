import Foundation
import GRDB
import OutpostCore
import Testing

@testable import OutpostSync

@Suite struct SyncedStoreTests {
    @Test func writesArePendingAtOnce() async throws {
        try await withStore { store, _ in
            let id = try await store.create("notes", fields: ["text": "hi", "id": "ignored"])
            #expect(id.hasPrefix("local-"))
            let patched = try await store.patch("notes", id: id, fields: ["text": "hello", "tags": ["a"]])
            #expect(patched.fields == ["text": "hello", "tags": ["a"]])
            #expect(patched.state == .pending)
            #expect(try await store.status() == ["notes": SyncTypeStatus(pending: 2, failed: 0)])
        }
    }

    @Test func aMergePatchRemovesNullsAndMergesObjects() async throws {
        try await withStore { store, _ in
            let id = try await store.create("notes", fields: ["a": 1, "b": ["x": 1, "y": 2], "c": [1, 2]])
            let record = try await store.patch("notes", id: id, fields: ["a": .null, "b": ["y": .null, "z": 3], "c": [3]])
            #expect(record.fields == ["b": ["x": 1, "z": 3], "c": [3]])
        }
    }

    @Test func patchingAnUnknownRecordFails() async throws {
        try await withStore { store, _ in
            await #expect(throws: SyncError.self) { try await store.patch("notes", id: "nope", fields: ["a": 1]) }
        }
    }

    @Test func writesSurviveReopening() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let id: String
        do {
            let store = try SyncedStore(folder: folder)
            id = try await store.create("notes", fields: ["text": "one"])
            try await store.patch("notes", id: id, fields: ["text": "two"])
        }
        let reopened = try SyncedStore(folder: folder)
        let records = try await reopened.query("notes")
        #expect(records.map(\.id) == [id])
        #expect(records.first?.fields == ["text": "two"])
        #expect(records.first?.state == .pending)
        #expect(try await reopened.status()["notes"] == SyncTypeStatus(pending: 2, failed: 0))
    }

    /// A local write and its outbox entry are one transaction: when the entry cannot be written,
    /// the record is not written either.
    @Test func aWriteAndItsOutboxEntryCommitTogether() async throws {
        try await withStore { store, _ in
            let id = try await store.create("notes", fields: ["text": "kept"])
            try await store.database.write { db in try db.execute(sql: "DROP TABLE pending") }
            await #expect(throws: (any Error).self) { try await store.create("notes", fields: ["text": "lost"]) }
            await #expect(throws: (any Error).self) { try await store.patch("notes", id: id, fields: ["text": "lost"]) }
            let records = try await store.query("notes")
            #expect(records.map(\.fields) == [["text": "kept"]])
        }
    }

    /// Every pending record has an outbox entry and every entry a record, after reopening.
    @Test func pendingRecordsAndOutboxEntriesMatchAfterReopening() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let store = try SyncedStore(folder: folder)
            for index in 0..<20 {
                let id = try await store.create("notes", fields: ["n": .int(index)])
                if index.isMultiple(of: 3) { try await store.patch("notes", id: id, fields: ["odd": .bool(index % 2 == 1)]) }
            }
        }
        let queue = try DatabaseQueue(path: folder.appending(path: "records.sqlite").path)
        let orphans = try await queue.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM pending p WHERE NOT EXISTS
                              (SELECT 1 FROM records r WHERE r.type = p.type AND r.id = p.record_id))
                         + (SELECT COUNT(*) FROM records r WHERE r.state = 'pending' AND NOT EXISTS
                              (SELECT 1 FROM pending p WHERE r.type = p.type AND r.id = p.record_id))
                    """)
        }
        #expect(orphans == 0)
        #expect(try await SyncedStore(folder: folder).status()["notes"] == SyncTypeStatus(pending: 27, failed: 0))
    }

    @Test func theFolderAndFileAreOwnerOnly() async throws {
        try await withStore { store, folder in
            try await store.create("notes", fields: [:])
            let folderMode = try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int
            let fileMode = try FileManager.default.attributesOfItem(atPath: store.fileURL.path)[.posixPermissions] as? Int
            #expect(folderMode == 0o700)
            #expect(fileMode == 0o600)
        }
    }

    @Test func theAccountFolderIsUnderTheConfigurationFolder() throws {
        let base = URL(fileURLWithPath: "/tmp/outpost-config", isDirectory: true)
        let folder = try SyncedStore.folder(for: .custom(base), application: "notes", account: "user-1")
        #expect(folder.pathComponents == base.pathComponents + ["sync", "user-1"])
        #expect(throws: OutpostError.self) { try SyncedStore.folder(for: .custom(base), application: "notes", account: "../x") }
    }

    @Test func observationEmitsTheAnswerAgainWhenItChanges() async throws {
        try await withStore { store, _ in
            var answers = try store.observe("notes", filter: "record.done == false").makeAsyncIterator()
            #expect(try await answers.next() == [])
            let id = try await store.create("notes", fields: ["done": false])
            #expect(try await answers.next()?.map(\.id) == [id])
            try await store.patch("notes", id: id, fields: ["done": true])
            #expect(try await answers.next() == [])
        }
    }

    @Test func aStoreWithoutAClientRefusesToSync() async throws {
        try await withStore { store, _ in
            await #expect(throws: SyncError.self) { try await store.pull("notes") }
            await #expect(throws: SyncError.self) { try await store.push() }
        }
    }
}
