import Foundation
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import OutpostTestSupport
import PostgresNIO
import Testing

@testable import OutpostServer

/// ``AccountStorage/deleteUser(id:transferringTo:)`` on every backend.
extension StorageConformanceTests {
    /// ada with records (one private), two token families, a session, a role, quota bounds, an
    /// idempotency entry and a provider link; bob with a record and a token.
    func seedAccounts(_ storage: any Storage) async throws -> (
        ada: StoredUser, bob: StoredUser, adaRecords: [String], bobRecord: String
    ) {
        let ada = try await storage.createUser(username: "ada", passwordHash: nil)
        let bob = try await storage.createUser(username: "bob", passwordHash: nil)
        try await storage.link(provider: "com.example", subject: "ada-at-example", userID: ada.id)
        let adaRecords = [
            try await storage.createRecord(type: "notes", fields: ["t": "a"], owner: ada.id).id,
            try await storage.createRecord(type: "notes", fields: ["t": "b"], owner: ada.id, isPrivate: true).id,
        ]
        let bobRecord = try await storage.createRecord(type: "notes", fields: ["t": "c"], owner: bob.id).id
        for (hash, user, family) in [("ada-1", ada.id, "fa1"), ("ada-2", ada.id, "fa2"), ("bob-1", bob.id, "fb1")] {
            try await storage.saveToken(
                StoredToken(
                    hash: hash, kind: .access, userID: user, clientID: "outpost-cli", scope: "records profile", family: family,
                    expiresAt: Int64.max, state: "active"))
        }
        // A client's token in ada's family (as a refresh grant issues): it goes with the family.
        try await storage.saveToken(
            StoredToken(
                hash: "ada-refresh", kind: .refresh, userID: ada.id, clientID: "outpost-cli", scope: "records", family: "fa2",
                expiresAt: Int64.max, state: "active"))
        try await storage.saveSession(hash: "ada-session", userID: ada.id, expiresAt: Int64.max)
        try await storage.saveSession(hash: "bob-session", userID: bob.id, expiresAt: Int64.max)
        try await storage.addRole("admin", userID: ada.id)
        var overrides = QuotaOverrides()
        overrides.records = .limit(10)
        try await (storage as? any QuotaStorage)?.setQuotaOverrides(overrides, user: ada.id)
        let key = IdempotencyKey(caller: "user:" + ada.id, key: "k1", fingerprint: "f")
        _ = try await storage.claimIdempotencyKey(key, lease: .seconds(60), lifetime: .seconds(3600))
        return (ada, bob, adaRecords, bobRecord)
    }

    @Test(
        "Accounts: deleting a user removes them, their tokens, sessions, records (as deletions in the feed)", arguments: backends)
    func deleteUser(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let (ada, bob, adaRecords, bobRecord) = try await seedAccounts(storage)
            let before = try await feed(storage).changeBounds().latest
            let removal = try #require(try await storage.deleteUser(id: ada.id, transferringTo: nil))
            #expect(removal == AccountRemoval(userID: ada.id, username: "ada", records: 2, tokens: 3, recipient: nil))

            #expect(try await storage.user(id: ada.id) == nil)
            #expect(try await storage.user(username: "ada") == nil)
            #expect(try await storage.userID(provider: "com.example", subject: "ada-at-example") == nil)
            for hash in ["ada-1", "ada-2", "ada-refresh"] { #expect(try await storage.token(hash: hash) == nil, "\(hash)") }
            #expect(try await storage.sessionUser(hash: "ada-session", now: 0) == nil)
            #expect(try await storage.roles(userID: ada.id).isEmpty)
            #expect(try await (storage as? any QuotaStorage)?.quotaOverrides(user: ada.id) == QuotaOverrides())
            #expect(
                try await (storage as? any QuotaStorage)?.recordUsage(owner: ada.id) == RecordUsage(records: 0, recordBytes: 0))
            let key = IdempotencyKey(caller: "user:" + ada.id, key: "k1", fingerprint: "f")
            guard case .claimed = try await storage.claimIdempotencyKey(key, lease: .seconds(60), lifetime: .seconds(3600)) else {
                Issue.record("ada's idempotency entry is still there")
                return
            }
            for id in adaRecords { #expect(try await storage.record(type: "notes", id: id) == nil) }
            // Through the records' own triggers: each one a deletion in the feed, keeping its owner.
            let changes = try await feed(storage).changes(type: nil, after: before, limit: 10)
            #expect(changes.map(\.kind) == [.deleted, .deleted])
            #expect(Set(changes.map(\.record.id)) == Set(adaRecords))
            #expect(changes.allSatisfy { $0.record.owner == ada.id })

            // bob is untouched.
            #expect(try await storage.user(id: bob.id)?.username == "bob")
            #expect(try await storage.record(type: "notes", id: bobRecord)?.owner == bob.id)
            #expect(try await storage.token(hash: "bob-1")?.state == "active")
            #expect(try await storage.sessionUser(hash: "bob-session", now: 0) == bob.id)

            // A record write for the deleted id is refused; deleting again finds nobody.
            await #expect(throws: (any Error).self) {
                _ = try await storage.createRecord(type: "notes", fields: [:], owner: ada.id)
            }
            #expect(
                AccountDeleted.serverError(
                    for: await Self.failure { try await storage.createRecord(type: "notes", fields: [:], owner: ada.id) })?
                    .code == "invalid_token")
            #expect(try await storage.deleteUser(id: ada.id, transferringTo: nil) == nil)
            #expect(
                try await (storage as? any QuotaStorage)?.recordUsage(owner: ada.id) == RecordUsage(records: 0, recordBytes: 0))
        }
    }

    @Test("Accounts: transferring gives the records to the recipient, as updates in the feed", arguments: backends)
    func transferUser(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let (ada, bob, adaRecords, _) = try await seedAccounts(storage)
            await #expect(throws: AccountDeletionFailure.unknownRecipient) {
                _ = try await storage.deleteUser(id: ada.id, transferringTo: "u_nobody")
            }
            await #expect(throws: AccountDeletionFailure.unknownRecipient) {
                _ = try await storage.deleteUser(id: ada.id, transferringTo: ada.id)
            }
            #expect(try await storage.user(id: ada.id) != nil, "a refused deletion changes nothing")
            let before = try await feed(storage).changeBounds().latest
            let removal = try #require(try await storage.deleteUser(id: ada.id, transferringTo: bob.id))
            #expect(removal.records == 2 && removal.recipient == bob.id)
            #expect(try await storage.user(id: ada.id) == nil)
            for id in adaRecords {
                let record = try #require(try await storage.record(type: "notes", id: id))
                #expect(record.owner == bob.id && record.version == 2)
            }
            let changes = try await feed(storage).changes(type: nil, after: before, limit: 10)
            #expect(changes.map(\.kind) == [.updated, .updated])
            #expect(changes.allSatisfy { $0.record.owner == bob.id })
            #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: bob.id).records == 3)
            #expect(try await (storage as? any QuotaStorage)?.recordUsage(owner: ada.id).records == 0)
        }
    }

    @Test(
        "Accounts: a record write in flight when a deletion starts commits first, and is deleted with the rest",
        arguments: backends.filter { $0 == .postgres })
    func writeInFlight(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let postgres = try #require(storage as? PostgresStorage)
            let ada = try await storage.createUser(username: "ada", passwordHash: nil)
            let (inserted, announce) = AsyncStream.makeStream(of: Void.self)
            let release = Gate()
            // A write of ada's that has run its statement (and its triggers) but not committed yet.
            async let writer: Void = postgres.withTransaction { connection in
                try await PostgresStorage.execute(
                    """
                    INSERT INTO records (type, id, owner, body, version, created_at, updated_at)
                    VALUES ('notes', 'r_in_flight', \(ada.id), '{}', 1, 0, 0)
                    """, on: connection)
                announce.yield()
                await release.wait()
            }
            var iterator = inserted.makeAsyncIterator()
            _ = await iterator.next()
            async let deletion = storage.deleteUser(id: ada.id, transferringTo: nil)
            // The deletion waits for the write's lock on ada's usage row instead of reading the records now.
            let waits = try await eventually(within: .seconds(20), every: .milliseconds(10)) {
                let rows = try await postgres.rows(
                    """
                    SELECT count(*) AS n FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """)
                return try (rows.first?["n"].decode(Int64.self) ?? 0) > 0
            }
            release.open()
            try await writer
            let removal = try await deletion
            #expect(waits, "the deletion did not wait for the write in flight")
            #expect(removal?.records == 1)
            #expect(try await storage.record(type: "notes", id: "r_in_flight") == nil)
        }
    }

    /// The error `body` throws (fails the test when it throws none).
    static func failure(_ body: () async throws -> some Any) async -> any Error {
        do {
            _ = try await body()
        } catch {
            return error
        }
        Issue.record("expected an error")
        return CancellationError()
    }
}
