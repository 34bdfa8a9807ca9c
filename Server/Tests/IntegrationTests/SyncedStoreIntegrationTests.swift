import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostSync
import OutpostTestSupport
import Synchronization
import Testing

/// OutpostSync's `SyncedStore` against a live server: pulls equal the server's list and follow its
/// change feed, offline writes land once, conflicts are resolved by each policy, an expired feed
/// position reloads without losing local writes, and a store holds only what its user may read.
@Suite("A synced store on a live server", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct SyncedStoreIntegrationTests {
    /// A user's token and a client signing with it, with `extra` middlewares after the token's.
    struct User {
        let token: String
        let client: OutpostClient

        init(_ fixture: AuthFixture, _ name: String, extra: [any ClientMiddleware] = []) async throws {
            token = try #require(try await fixture.passwordTokens(name)["access_token"] as? String)
            client = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL),
                middlewares: [HeaderMiddleware([.authorization: "Bearer \(token)"])] + extra)
        }

        func send(_ method: HTTPRequest.Method, _ path: String, _ body: JSONValue? = nil) async throws -> JSONValue {
            try await PrivateRecordsTests.send(client.configuration.baseURL, method, path, token: token, body: body).json()
        }
    }

    /// Runs `body` with a store in a fresh folder for `user`, and shuts the client down.
    static func withStore(
        _ user: User, policies: [String: ConflictPolicy] = [:], _ body: (SyncedStore) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            try await body(try SyncedStore(folder: folder, client: user.client, policies: policies))
        } catch {
            try? await user.client.shutdown()
            throw error
        }
        try await user.client.shutdown()
    }

    /// Every record of `type` the user may read, by id, through the list's pages.
    static func serverRecords(_ user: User, _ type: String) async throws -> [String: [String: JSONValue]] {
        var records: [String: [String: JSONValue]] = [:]
        var cursor: String?
        repeat {
            let page = try await user.send(.get, "/records/\(type)?limit=100" + (cursor.map { "&cursor=\($0)" } ?? ""))
            for record in page["results"]?.arrayValue ?? [] {
                if let fields = record.objectValue, let id = fields["id"]?.stringValue { records[id] = fields }
            }
            cursor = page["next_cursor"]?.stringValue
        } while cursor != nil
        return records
    }

    static func local(_ store: SyncedStore, _ type: String) async throws -> [String: [String: JSONValue]] {
        Dictionary(uniqueKeysWithValues: try await store.query(type).map { ($0.id, $0.fields) })
    }

    @Test("the first pull equals the server's list across pages; a later pull brings changes made elsewhere")
    func pullFollowsTheServer() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            let other = try await User(fixture, "ada")
            for index in 0..<130 { _ = try await other.send(.post, "/records/items", ["n": .int(index)]) }
            try await Self.withStore(ada) { store in
                try await store.pull("items")
                #expect(try await Self.local(store, "items") == Self.serverRecords(ada, "items"))
                #expect(try await store.query("items").allSatisfy { $0.state == .confirmed })

                let created = try await other.send(.post, "/records/items", ["n": 1000])
                let first = try await store.query("items", sort: "n").first
                let firstID = try #require(first?.id)
                let secondID = try #require(try await store.query("items", sort: "n").dropFirst().first?.id)
                _ = try await other.send(.patch, "/records/items/\(firstID)", ["n": -1])
                _ = try await PrivateRecordsTests.send(
                    fixture.server.baseURL, .delete, "/records/items/\(secondID)", token: other.token)
                try await store.pull("items")
                let local = try await Self.local(store, "items")
                #expect(local == (try await Self.serverRecords(ada, "items")))
                #expect(local[created["id"]?.stringValue ?? ""] != nil)
                #expect(local[secondID] == nil)
                #expect(try await store.query("items", filter: "record.n < 0").map(\.id) == [firstID])
            }
            try await other.client.shutdown()
        }
    }

    @Test("an offline create and patch land once when pushed, also when the create's reply was lost")
    func offlineWritesLandOnce() async throws {
        try await withAuthFixture { fixture in
            // Loses the reply to the first create: the server created the record, the store does not
            // know. Counts the creates sent.
            let posts = Mutex(0)
            let losing = ClosureMiddleware { request, body, _, next in
                let response = try await next(request, body)
                guard request.method == .post else { return response }
                if posts.withLock({
                    $0 += 1; return $0
                }) == 1 {
                    throw LostReply()
                }
                return response
            }
            let ada = try await User(fixture, "ada", extra: [losing])
            try await Self.withStore(ada) { store in
                try await store.pull("items")
                let id = try await store.create("items", fields: ["text": "draft"])
                try await store.patch("items", id: id, fields: ["text": "final", "done": true])
                // The client may resend the keyed create itself; else the push stops with the
                // writes still pending.
                if (try? await store.push()) == nil {
                    #expect(try await store.status()["items"] == SyncTypeStatus(pending: 2, failed: 0))
                    try await store.push()
                }
                #expect(posts.withLock { $0 } == 2)
                #expect(try await store.status().isEmpty)
                let server = try await Self.serverRecords(ada, "items")
                #expect(server.count == 1)
                let record = try #require(try await store.query("items").first)
                #expect(record.state == .confirmed)
                #expect(record.id == server.keys.first)
                #expect(record.fields["text"] == "final" && record.fields["done"] == true)
                #expect(server[record.id]?["text"] == "final")
            }
        }
    }

    /// Pulls a record the store then knows the version of, patches it locally and elsewhere, and
    /// pushes with `policy`; answers the local record, the server's and the conflict events.
    static func conflict(
        _ fixture: AuthFixture, policy: ConflictPolicy
    ) async throws -> (local: SyncedRecord?, server: [String: JSONValue]?, events: [ConflictEvent]) {
        let ada = try await User(fixture, "ada")
        let other = try await User(fixture, "ada")
        var result: (SyncedRecord?, [String: JSONValue]?, [ConflictEvent]) = (nil, nil, [])
        let created = try await other.send(.post, "/records/items", ["text": "base"])
        let id = try #require(created["id"]?.stringValue)
        try await Self.withStore(ada, policies: ["items": policy]) { store in
            try await store.pull("items")
            _ = try await other.send(.patch, "/records/items/\(id)", ["text": "base", "seen": true])
            try await store.pull("items")
            #expect(try await store.query("items").first?.version == 2)
            try await store.patch("items", id: id, fields: ["text": "mine", "local": 1])
            _ = try await other.send(.patch, "/records/items/\(id)", ["text": "theirs", "remote": 1])
            try await store.push()
            var events: [ConflictEvent] = []
            for await event in store.conflicts {
                events.append(event)
                break
            }
            result = (try await store.query("items").first, try await Self.serverRecords(ada, "items")[id], events)
        }
        try await other.client.shutdown()
        return result
    }

    @Test("a 412 resolved for the server keeps the server's record and reports it")
    func serverWins() async throws {
        try await withAuthFixture { fixture in
            let (local, server, events) = try await Self.conflict(fixture, policy: .serverWins)
            #expect(server?["text"] == "theirs" && server?["local"] == nil)
            #expect(local?.fields == server && local?.state == .confirmed)
            #expect(events.map(\.resolution) == [.serverWon])
        }
    }

    @Test("a 412 resolved for the client applies the local patch on the server's version")
    func clientWins() async throws {
        try await withAuthFixture { fixture in
            let (local, server, events) = try await Self.conflict(fixture, policy: .clientWins)
            #expect(server?["text"] == "mine" && server?["local"] == 1 && server?["remote"] == 1)
            #expect(local?.fields == server && local?.state == .confirmed)
            #expect(events.map(\.resolution) == [.clientWon])
        }
    }

    @Test("a 412 resolved by a merge sends the merge's fields, given the base, local and server fields")
    func merge() async throws {
        try await withAuthFixture { fixture in
            let policy = ConflictPolicy.merge { base, local, server in
                var merged = server.merging(local) { _, mine in mine }
                merged["text"] = .string(
                    "\(base["text"]?.stringValue ?? "?")|\(local["text"]?.stringValue ?? "?")|\(server["text"]?.stringValue ?? "?")"
                )
                return merged
            }
            let (local, server, events) = try await Self.conflict(fixture, policy: policy)
            #expect(server?["text"] == "base|mine|theirs" && server?["local"] == 1 && server?["remote"] == 1)
            #expect(local?.fields == server && local?.state == .confirmed)
            #expect(events.map(\.resolution) == [.merged])
        }
    }

    @Test("a refused write marks the record failed and stays out of the queue")
    func refusedWritesFail() async throws {
        try await withAuthFixture(
            configure: { $0.accessRules = try! AccessRuleSet(["items": ["create": "record.text != \"no\""]]) }
        ) { fixture in
            let ada = try await User(fixture, "ada")
            try await Self.withStore(ada) { store in
                let refused = try await store.create("items", fields: ["text": "no"])
                try await store.create("items", fields: ["text": "yes"])
                try await store.push()
                #expect(try await store.status()["items"] == SyncTypeStatus(pending: 0, failed: 1))
                let states = Dictionary(uniqueKeysWithValues: try await store.query("items").map { ($0.id, $0.state) })
                guard case .failed = states[refused] else {
                    Issue.record("the refused create is \(String(describing: states[refused]))")
                    return
                }
                #expect(states.values.filter { $0 == .confirmed }.count == 1)
            }
        }
    }

    @Test("a 410 for an expired position reloads the type and keeps the local writes")
    func expiredPositionReloads() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            let other = try await User(fixture, "ada")
            let kept = try await other.send(.post, "/records/items", ["text": "kept"])
            let keptID = try #require(kept["id"]?.stringValue)
            try await Self.withStore(ada) { store in
                try await store.pull("items")
                try await store.patch("items", id: keptID, fields: ["text": "local edit"])
                let draft = try await store.create("items", fields: ["text": "draft"])
                // A change the feed then forgets: only a reload can bring it.
                let missed = try await other.send(.post, "/records/items", ["text": "missed"])
                let storage = try #require(try await fixture.server.openStorage() as? any ChangeFeedStorage & Storage)
                _ = try await storage.pruneChanges(writtenBefore: Int64(Date().timeIntervalSince1970 * 1000) + 60_000)
                try await storage.close()

                try await store.pull("items")
                let local = try await store.query("items")
                #expect(local.contains { $0.id == missed["id"]?.stringValue && $0.state == .confirmed })
                #expect(local.first { $0.id == keptID }?.fields["text"] == "local edit")
                #expect(local.first { $0.id == draft }?.state == .pending)
                #expect(try await store.status()["items"] == SyncTypeStatus(pending: 2, failed: 0))
            }
            try await other.client.shutdown()
        }
    }

    @Test("a user's store never holds another user's private record")
    func privateRecordsStayPrivate() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            let bob = try await User(fixture, "bob")
            let before = try await ada.send(.post, "/records/items?visibility=private", ["text": "before"])
            _ = try await ada.send(.post, "/records/items", ["text": "open"])
            try await Self.withStore(bob) { store in
                try await store.pull("items")
                #expect(try await store.query("items").map { $0.fields["text"] } == ["open"])
                let after = try await ada.send(.post, "/records/items?visibility=private", ["text": "after"])
                try await store.pull("items")
                let ids = try await store.query("items").map(\.id)
                #expect(!ids.contains(before["id"]?.stringValue ?? "") && !ids.contains(after["id"]?.stringValue ?? ""))
                #expect(ids.count == 1)
            }
            try await Self.withStore(ada) { store in
                try await store.pull("items")
                #expect(try await store.query("items").count == 3)
            }
        }
    }
}

/// The failure of a reply that never arrived.
struct LostReply: Error {}
