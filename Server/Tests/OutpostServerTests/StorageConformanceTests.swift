import Foundation
import Logging
@_spi(OutpostInternal) import OutpostCore
import OutpostServerTesting
import OutpostTestSupport
import Testing

@testable import OutpostServer

/// One suite, every backend: what the server relies on from ``Storage``, checked against SQLite
/// and (when `OUTPOST_TEST_POSTGRES_URL` is set) PostgreSQL. "Two instances" are two storages
/// opened on one database.
@Suite("Storage conformance", .closesWhatItOpens)
struct StorageConformanceTests {
    static let backends = ScratchDatabase.backends

    func withStorage(
        _ backend: ScratchDatabase.Backend, busyTimeout: Duration = .seconds(5),
        _ body: (any Storage, ScratchDatabase) async throws -> Void
    ) async throws {
        await ResourcePlaces.enter()
        let database = try await ScratchDatabase.make(backend)
        do {
            let storage = try await database.open(busyTimeout: busyTimeout)
            do {
                try await body(storage, database)
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }

    @Test(
        "PostgreSQL is configured for these tests",
        .enabled(
            if: ScratchDatabase.postgresRequired || ScratchDatabase.postgresBase != nil,
            "\(ScratchDatabase.postgresSkipReason ?? "")"))
    func postgresConfigured() async throws {
        #expect(ScratchDatabase.postgresBase != nil, "OUTPOST_REQUIRE_POSTGRES=1 needs OUTPOST_TEST_POSTGRES_URL")
        #expect(ScratchDatabase.backends.contains(.postgres))
    }

    @Test("Migrations apply once, also from two instances at once", arguments: backends)
    func migrations(_ backend: ScratchDatabase.Backend) async throws {
        let database = try await ScratchDatabase.make(backend)
        // Both opened at once; whatever opened is closed, whatever failed fails the test.
        let opened = await withTaskGroup(of: Result<any Storage, any Error>.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    do { return .success(try await database.open()) } catch { return .failure(error) }
                }
            }
            return await group.reduce(into: [Result<any Storage, any Error>]()) { $0.append($1) }
        }
        let storages = opened.compactMap { try? $0.get() }
        do {
            for result in opened { _ = try result.get() }
            let version = try await storages[0].schemaVersion()
            #expect(version > 0)
            try await storages[1].migrate()
            #expect(try await storages[1].schemaVersion() == version)
            try await storages[0].checkHealth()
            let probed = try await storages[0].health()
            #expect(probed == version, "the health probe reports the schema version")
        } catch {
            for storage in storages { try? await storage.close() }
            await database.remove()
            throw error
        }
        for storage in storages { try await storage.close() }
        await database.remove()
    }

    @Test("Records: create, read, replace and delete with versions", arguments: backends)
    func recordLifecycle(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let created = try await storage.createRecord(type: "notes", fields: ["title": "a", "n": 1], owner: "u_1")
            #expect(created.version == 1)
            #expect(created.id.count == 16)
            #expect(created.owner == "u_1")
            let read = try #require(try await storage.record(type: "notes", id: created.id))
            #expect(try read.fields == ["title": "a", "n": 1])
            #expect(try await storage.record(type: "other", id: created.id) == nil)
            let replaced = try await storage.replaceRecord(
                type: "notes", id: created.id, fields: ["title": "b"], expectedVersion: 1)
            #expect(replaced.version == 2)
            await #expect(throws: RecordWriteFailure.self) {
                _ = try await storage.replaceRecord(type: "notes", id: created.id, fields: [:], expectedVersion: 1)
            }
            await #expect(throws: RecordWriteFailure.self) {
                try await storage.deleteRecord(type: "notes", id: created.id, expectedVersion: 1)
            }
            try await storage.deleteRecord(type: "notes", id: created.id, expectedVersion: 2)
            #expect(try await storage.record(type: "notes", id: created.id) == nil)
            do {
                try await storage.deleteRecord(type: "notes", id: created.id, expectedVersion: nil)
                Issue.record("deleting a missing record must fail")
            } catch RecordWriteFailure.notFound {}
        }
    }

    @Test("Concurrent read-modify-writes of one record from two instances all apply", arguments: backends)
    func concurrentUpdates(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let record = try await storage.createRecord(type: "counters", fields: ["n": 0], owner: nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<24 {
                    let target: any Storage = index.isMultiple(of: 2) ? storage : other
                    group.addTask {
                        _ = try await target.updateRecord(type: "counters", id: record.id, expectedVersion: nil) { current in
                            var fields = try current.fields
                            fields["n"] = .int((fields["n"]?.intValue ?? 0) + 1)
                            return fields
                        }
                    }
                }
                try await group.waitForAll()
            }
            let final = try #require(try await other.record(type: "counters", id: record.id))
            #expect(try final.fields["n"] == .int(24))
            #expect(final.version == 25)
            try await other.close()
        }
    }

    @Test("Any JSON string is stored and read back as sent, a NUL character included", arguments: backends)
    func unusualText(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let fields: [String: JSONValue] = ["nul": "a\u{0}b", "emoji": "🦜", "quote": "\"\\", "big": 12_345_678_901_234]
            let created = try await storage.createRecord(type: "text", fields: fields, owner: nil)
            let read = try #require(try await storage.record(type: "text", id: created.id))
            #expect(try read.fields == fields)
            let query = RecordQuery(type: "text", filters: [("emoji", "🦜")], limit: 5)
            #expect(try await storage.listRecords(query, from: nil, backwards: false).map(\.id) == [created.id])
        }
    }

    @Test("An update with a stale version or of a missing record changes nothing", arguments: backends)
    func updateFailures(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let record = try await storage.createRecord(type: "t", fields: ["a": 1], owner: nil)
            do {
                _ = try await storage.updateRecord(type: "t", id: record.id, expectedVersion: 7) { _ in ["a": 2] }
                Issue.record("a stale version must fail")
            } catch RecordWriteFailure.versionMismatch(let current) {
                #expect(current == 1)
            }
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                _ = try await storage.updateRecord(type: "t", id: record.id, expectedVersion: nil) { _ in throw Refused() }
            }
            #expect(try await storage.record(type: "t", id: record.id)?.version == 1)
            do {
                _ = try await storage.updateRecord(type: "t", id: "missing", expectedVersion: nil) { _ in [:] }
                Issue.record("a missing record must fail")
            } catch RecordWriteFailure.notFound {}
        }
    }

    @Test("Lists: keyset pages both ways, equality filters, private records", arguments: backends)
    func lists(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            var ids: [String] = []
            for index in 0..<7 {
                let fields: [String: JSONValue] = [
                    "i": .int(index), "even": .bool(index.isMultiple(of: 2)), "name": .string("n\(index % 3)"),
                    "maybe": index == 3 ? .null : .int(1), "tags": ["x", .int(index % 2)],
                ]
                ids.append(try await storage.createRecord(type: "items", fields: fields, owner: "u_a").id)
            }
            _ = try await storage.createRecord(type: "items", fields: ["i": 99], owner: "u_b", isPrivate: true)
            _ = try await storage.createRecord(type: "others", fields: ["i": 1], owner: nil)

            var query = RecordQuery(type: "items", limit: 3)
            let first = try await storage.listRecords(query, from: nil, backwards: false)
            #expect(first.map(\.id) == Array(ids[0..<4]))  // limit + 1
            let after = RecordPosition(time: first[2].createdAt, seq: first[2].seq)
            let second = try await storage.listRecords(query, from: after, backwards: false)
            #expect(second.map(\.id) == Array(ids[3..<7]))
            let before = try await storage.listRecords(
                query, from: RecordPosition(time: second[0].createdAt, seq: second[0].seq), backwards: true)
            #expect(before.map(\.id) == [ids[2], ids[1], ids[0]])
            query.sort = .newest
            query.limit = 10
            #expect(try await storage.listRecords(query, from: nil, backwards: false).map(\.id) == ids.reversed())

            func matching(_ field: String, _ value: JSONValue) async throws -> Set<String> {
                let filtered = RecordQuery(type: "items", filters: [(field, value)], limit: 50)
                return Set(try await storage.listRecords(filtered, from: nil, backwards: false).map(\.id))
            }
            #expect(try await matching("even", true) == [ids[0], ids[2], ids[4], ids[6]])
            #expect(try await matching("name", "n1") == [ids[1], ids[4]])
            #expect(try await matching("i", 5) == [ids[5]])
            #expect(try await matching("i", 5.0) == [ids[5]])
            #expect(try await matching("i", "5").isEmpty)
            #expect(try await matching("maybe", .null) == [ids[3]])
            #expect(try await matching("tags", ["x", 1]) == [ids[1], ids[3], ids[5]])
            #expect(try await matching("missing", .null).isEmpty)

            let anonymous = try await storage.listRecords(RecordQuery(type: "items", limit: 50), page: 1)
            #expect(anonymous.total == 7)
            let owner = try await storage.listRecords(RecordQuery(type: "items", limit: 5, viewer: "u_b"), page: 2)
            #expect(owner.total == 8)
            #expect(owner.records.count == 3)
        }
    }

    @Test("A secret is made once and shared by every instance", arguments: backends)
    func secrets(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            async let a = storage.secret(named: "cursor_key")
            async let b = other.secret(named: "cursor_key")
            let (first, second) = try await (a, b)
            #expect(first.count == 32)
            #expect(first == second)
            #expect(try await storage.secret(named: "form_key") != first)
            try await other.close()
        }
    }

    @Test("Usernames are unique ignoring case; only that is usernameTaken", arguments: backends)
    func users(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            let user = try await storage.createUser(username: "Alice", passwordHash: "hash")
            #expect(user.id.hasPrefix("u_"))
            #expect(try await storage.user(username: "alice")?.id == user.id)
            #expect(try await storage.user(id: user.id)?.passwordHash == "hash")
            do {
                _ = try await storage.createUser(username: "ALICE", passwordHash: nil)
                Issue.record("a username differing in case only must be taken")
            } catch UserWriteFailure.usernameTaken {}
            try await storage.setEntitlements(["pro", "beta"], userID: user.id)
            #expect(try await storage.user(id: user.id)?.entitlements == ["pro", "beta"])
        }
    }

    @Test("Concurrent first sign-ins of one identity from two instances create one user", arguments: backends)
    func providerUserRace(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<8 {
                    let target: any Storage = index.isMultiple(of: 2) ? storage : other
                    group.addTask {
                        do {
                            return "created:"
                                + (try await target.createUser(username: "p\(index)", provider: "gh", subject: "42").id)
                        } catch UserWriteFailure.identityLinked(let userID) {
                            return "linked:" + userID
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            let created = outcomes.filter { $0.hasPrefix("created:") }
            #expect(created.count == 1)
            let winner = try #require(created.first?.dropFirst("created:".count))
            #expect(outcomes.allSatisfy { $0.hasSuffix(winner) })
            #expect(try await storage.userID(provider: "gh", subject: "42") == String(winner))
            // The losers' users were rolled back with their links.
            var users = 0
            for index in 0..<8 where try await storage.user(username: "p\(index)") != nil { users += 1 }
            #expect(users == 1)
            try await other.close()
        }
    }

    @Test("A refresh token is rotated exactly once under concurrent exchanges from two instances", arguments: backends)
    func tokenRotation(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let token = StoredToken(
                hash: "h1", kind: .refresh, userID: "u_1", clientID: "outpost-cli", scope: "records", family: "f1",
                expiresAt: Identifiers.nowMilliseconds() + 60_000, state: "active")
            try await storage.saveToken(token)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    let target: any Storage = index.isMultiple(of: 2) ? storage : other
                    var replacement = token
                    replacement.hash = "new\(index)"
                    group.addTask { try await target.rotateToken(hash: "h1", replacements: [replacement], successor: nil) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
            var saved = 0
            for index in 0..<10 where try await storage.token(hash: "new\(index)") != nil { saved += 1 }
            #expect(saved == 1, "only the winning rotation saves its replacement")
            #expect(try await storage.transitionToken(hash: "h1", from: "active", to: "revoked") == false)
            #expect(try await other.token(hash: "h1")?.state == "rotated")
            try await storage.revokeFamily("f1")
            #expect(try await storage.token(hash: "h1")?.state == "revoked")
            try await other.close()
        }
    }

    @Test(
        "A rotation saves its sealed successor with it; another instance reads it until it expires; expired ones go",
        arguments: backends)
    func rotatedSuccessors(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let now = Identifiers.nowMilliseconds()
            for hash in ["old", "current"] {
                try await storage.saveToken(
                    StoredToken(
                        hash: hash, kind: .refresh, userID: "u_1", clientID: "outpost-cli", scope: "records", family: "f2",
                        expiresAt: now + 60_000, state: "active"))
            }
            // A successor that has already expired, then one that is still valid.
            #expect(
                try await storage.rotateToken(
                    hash: "old", replacements: [], successor: SealedSuccessor(sealed: "sealed-old", expiresAt: now - 1)))
            #expect(try await other.successor(hash: "old", now: now) == nil)
            #expect(
                try await other.rotateToken(
                    hash: "current", replacements: [], successor: SealedSuccessor(sealed: "sealed-now", expiresAt: now + 30_000))
            )
            #expect(try await storage.successor(hash: "current", now: now) == "sealed-now")
            #expect(try await storage.successor(hash: "current", now: now + 30_000) == nil, "past its window")
            // A failed rotation (the token is no longer active) saves no successor.
            #expect(
                try await storage.rotateToken(
                    hash: "current", replacements: [], successor: SealedSuccessor(sealed: "other", expiresAt: now + 30_000))
                    == false)
            #expect(try await other.successor(hash: "current", now: now) == "sealed-now")
            // The expired row was removed by the later rotation, whatever the time asked about.
            #expect(try await storage.successor(hash: "old", now: 0) == nil)
            try await other.close()
        }
    }

    @Test("Codes, device codes, sessions, clients and failure counts", arguments: backends)
    func authRecords(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let now = Identifiers.nowMilliseconds()
            try await storage.saveCode(
                hash: "c1",
                StoredAuthorizationCode(
                    clientID: "outpost-cli", userID: "u_1", redirectURI: "http://127.0.0.1/cb", scope: "records",
                    codeChallenge: nil, expiresAt: now + 60_000, used: false, family: "fam"))
            async let use1 = storage.useCode(hash: "c1")
            async let use2 = other.useCode(hash: "c1")
            let uses = try await [use1, use2].compactMap { $0 }
            #expect(uses.count == 1)
            #expect(uses.first?.family == "fam")
            #expect(try await storage.codeFamily(hash: "c1") == "fam")

            try await storage.saveDeviceCode(
                StoredDeviceCode(
                    hash: "d1", userCode: "ABCD-EFGH", clientID: "outpost-cli", scope: "records", expiresAt: now + 60_000,
                    intervalSeconds: 5, lastPoll: 0, status: "pending", userID: nil))
            try await other.updateDeviceCode(hash: "d1", status: "approved", userID: "u_1", lastPoll: now, interval: 10)
            let device = try #require(try await storage.deviceCode(userCode: "ABCD-EFGH"))
            #expect(
                device.status == "approved" && device.userID == "u_1" && device.intervalSeconds == 10 && device.lastPoll == now)

            try await storage.saveSession(hash: "s1", userID: "u_1", expiresAt: now + 60_000)
            #expect(try await other.sessionUser(hash: "s1", now: now) == "u_1")
            #expect(try await other.browserSessionExpiry(hash: "s1", now: now) == now + 60_000)
            #expect(try await other.sessionUser(hash: "s1", now: now + 60_001) == nil)
            try await other.removeSession(hash: "s1")
            #expect(try await storage.sessionUser(hash: "s1", now: now) == nil)

            let (client, secret) = try await storage.registerClient(
                name: "App", redirectURIs: ["https://app.example/cb"], grants: ["authorization_code", "refresh_token"],
                scopes: ["records"], confidential: true)
            #expect(secret != nil)
            #expect(try await other.client(id: client.id)?.redirectURIs == ["https://app.example/cb"])
            #expect(try await other.clients().map(\.id).contains("outpost-cli"))
            #expect(try await other.removeClient(id: client.id))
            #expect(try await storage.client(id: client.id) == nil)

            try await storage.recordFailure(key: "k", at: now, expiresAt: now + 1000)
            try await other.recordFailure(key: "k", at: now + 1, expiresAt: now + 1000)
            let failures = try await other.failures(key: "k", since: now - 1)
            #expect(failures.count == 2 && failures.oldest == now)
            try await storage.clearFailures(key: "k")
            #expect(try await other.failures(key: "k", since: now - 1).count == 0)
            try await other.close()
        }
    }

    @Test("Signing keys and OpenID sign-in context", arguments: backends)
    func openID(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, _ in
            try await storage.saveSigningKey(
                StoredSigningKey(kid: "k1", algorithm: "RS256", privateKeyPEM: "pem1", createdAt: 1, retiredAt: nil))
            try await storage.saveSigningKey(
                StoredSigningKey(kid: "k2", algorithm: "RS256", privateKeyPEM: "pem2", createdAt: 2, retiredAt: nil))
            try await storage.retireSigningKeys(except: "k2", at: 10)
            let keys = try await storage.signingKeys()
            #expect(keys.map(\.kid) == ["k2", "k1"])
            #expect(keys.last?.retiredAt == 10)
            #expect(try await storage.removeSigningKeys(retiredBefore: 11) == 1)
            let expires = Identifiers.nowMilliseconds() + 60_000
            try await storage.saveOpenIDCode(hash: "oc", nonce: "n", authTime: 5, expiresAt: expires)
            #expect(try await storage.takeOpenIDCode(hash: "oc")?.nonce == "n")
            #expect(try await storage.takeOpenIDCode(hash: "oc") == nil)
            try await storage.saveOpenIDFamily("fam", authTime: 7, expiresAt: expires)
            try await storage.saveOpenIDFamily("fam", authTime: 8, expiresAt: expires)
            #expect(try await storage.openIDFamilyAuthTime("fam") == 8)
        }
    }

    @Test("An idempotent create stores one record and replays it, also to a concurrent duplicate", arguments: backends)
    func idempotentCreate(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let key = IdempotencyKey(caller: "anonymous", key: "k-1", fingerprint: "fp")
            let outcomes = try await withThrowingTaskGroup(of: IdempotencyClaim.self) { group in
                for index in 0..<6 {
                    let target: any Storage = index.isMultiple(of: 2) ? storage : other
                    group.addTask {
                        let (claim, response) = try await target.createRecord(
                            type: "orders", fields: ["n": 1], owner: nil, isPrivate: false, key: key, lifetime: .seconds(60)
                        ) { record in StoredResponse(status: 201, headers: [["Location", record.id]], body: Data(record.id.utf8))
                        }
                        if case .claimed = claim { return .replay(try #require(response)) }
                        return claim
                    }
                }
                return try await group.reduce(into: [IdempotencyClaim]()) { $0.append($1) }
            }
            let records = try await storage.listRecords(RecordQuery(type: "orders", limit: 10), page: 1)
            #expect(records.total == 1)
            let id = try #require(records.records.first?.id)
            let expected = StoredResponse(status: 201, headers: [["Location", id]], body: Data(id.utf8))
            #expect(outcomes == Array(repeating: .replay(expected), count: 6))
            let mismatch = try await storage.createRecord(
                type: "orders", fields: ["n": 2], owner: nil, isPrivate: false,
                key: IdempotencyKey(caller: "anonymous", key: "k-1", fingerprint: "other"), lifetime: .seconds(60)
            ) { _ in StoredResponse(status: 201, headers: [], body: Data()) }
            #expect(mismatch.claim == .mismatch)
            try await other.close()
        }
    }

    @Test(
        "Idempotency claims: one holder, complete replays, release frees, a dead holder's lease is taken over",
        arguments: backends)
    func idempotencyClaims(_ backend: ScratchDatabase.Backend) async throws {
        try await withStorage(backend) { storage, database in
            let other = try await database.open()
            let key = IdempotencyKey(caller: "user:u_1", key: "lambda-1", fingerprint: "fp")
            guard
                case .claimed(let token) = try await storage.claimIdempotencyKey(key, lease: .seconds(60), lifetime: .seconds(60))
            else {
                Issue.record("the first claim must succeed")
                return
            }
            #expect(try await other.claimIdempotencyKey(key, lease: .seconds(60), lifetime: .seconds(60)) == .inProgress)
            let response = StoredResponse(status: 200, headers: [["Content-Type", "application/json"]], body: Data("1".utf8))
            try await storage.completeIdempotencyKey(key, token: token, response: response, lifetime: .seconds(60))
            #expect(try await other.claimIdempotencyKey(key, lease: .seconds(60), lifetime: .seconds(60)) == .replay(response))

            let released = IdempotencyKey(caller: "user:u_1", key: "lambda-2", fingerprint: "fp")
            guard
                case .claimed(let second) = try await other.claimIdempotencyKey(
                    released, lease: .seconds(60), lifetime: .seconds(60))
            else {
                Issue.record("a fresh key must be claimed")
                return
            }
            try await other.releaseIdempotencyKey(released, token: second)
            guard case .claimed = try await storage.claimIdempotencyKey(released, lease: .seconds(-1), lifetime: .seconds(60))
            else {
                Issue.record("a released key must be claimable again")
                return
            }
            // That lease ran out at once: another instance takes the key over.
            guard case .claimed = try await other.claimIdempotencyKey(released, lease: .seconds(60), lifetime: .seconds(60))
            else {
                Issue.record("an expired lease must be taken over")
                return
            }
            try await other.close()
        }
    }
}
