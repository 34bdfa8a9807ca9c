import Foundation
import HTTPTypes
import Outpost
import OutpostServer
import OutpostSync
import OutpostTestSupport
import Synchronization
import Testing

/// A synced store following the change feed of a live server, and deleting records offline.
@Suite("A synced store following a live server", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct SyncedStoreLiveTests {
    typealias User = SyncedStoreIntegrationTests.User

    /// Fails every request while `offline` is set, as a device without a network would.
    final class Connectivity: Sendable {
        let offline = Atomic(false)
        var middleware: ClosureMiddleware {
            ClosureMiddleware { request, body, _, next in
                if self.offline.load(ordering: .relaxed) { throw LostReply() }
                return try await next(request, body)
            }
        }
    }

    /// Waits until the store's `type` holds a record that `predicate` accepts.
    static func waitForRecord(
        _ store: SyncedStore, _ type: String, where predicate: @escaping @Sendable (SyncedRecord) -> Bool
    ) async throws {
        for try await answer in try store.observe(type) where answer.contains(where: predicate) { return }
    }

    /// Waits for a state `predicate` accepts; answers the states seen on the way, that one last.
    static func waitForState(
        _ live: LiveSync, where predicate: (SyncConnectionState) -> Bool
    ) async -> [SyncConnectionState] {
        var seen: [SyncConnectionState] = []
        for await state in live.states {
            seen.append(state)
            if predicate(state) { break }
        }
        return seen
    }

    @Test("follow loads the type, goes live, and applies changes made elsewhere as they happen")
    func followsChanges() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            let other = try await User(fixture, "ada")
            let first = try await other.send(.post, "/records/items", ["n": 1])
            try await SyncedStoreIntegrationTests.withStore(ada) { store in
                let live = try store.follow("items", resume: ManualResumeSignals())
                #expect(await Self.waitForState(live) { $0 == .live } == [.connecting, .live])
                #expect(try await store.query("items").map(\.id) == [first["id"]?.stringValue])
                let second = try await other.send(.post, "/records/items", ["n": 2])
                let secondID = try #require(second["id"]?.stringValue)
                try await Self.waitForRecord(store, "items") { $0.id == secondID && $0.fields["n"] == 2 }
                _ = try await other.send(.patch, "/records/items/\(secondID)", ["n": 3])
                try await Self.waitForRecord(store, "items") { $0.id == secondID && $0.fields["n"] == 3 }
                await live.stop()
                #expect(await Self.waitForState(live) { $0 == .stopped }.last == .stopped)
            }
            try await other.client.shutdown()
        }
    }

    @Test("a lost connection waits out its backoff until a resume signal, then goes on from its position")
    func reconnectsOnResume() async throws {
        try await withAuthFixture(configure: {
            // Streams end after a second, so that the loss of the network is noticed at once.
            $0.changes.heartbeatInterval = .milliseconds(100)
            $0.changes.maxStreamDuration = .seconds(1)
        }) { fixture in
            let network = Connectivity()
            let ada = try await User(fixture, "ada", extra: [network.middleware])
            let other = try await User(fixture, "ada")
            let resume = ManualResumeSignals()
            try await SyncedStoreIntegrationTests.withStore(ada) { store in
                // A wait far longer than the test may take: only the signal can end it.
                let live = try store.follow("items", backoff: SyncBackoff(initial: .seconds(3600)), resume: resume)
                _ = await Self.waitForState(live) { $0 == .live }
                network.offline.store(true, ordering: .relaxed)
                let waiting = await Self.waitForState(live) {
                    if case .waiting = $0 { true } else { false }
                }
                guard case .waiting(let retryIn, let attempt, let reason) = waiting.last else {
                    Issue.record("no waiting state: \(waiting)")
                    return
                }
                #expect(attempt == 1)
                #expect(retryIn >= .seconds(1800))
                #expect(!reason.isEmpty && !reason.contains(ada.token))

                // Written while the store is offline.
                let created = try await other.send(.post, "/records/items", ["n": 7])
                let id = try #require(created["id"]?.stringValue)
                network.offline.store(false, ordering: .relaxed)
                resume.resume()
                #expect(await Self.waitForState(live) { $0 == .live }.suffix(2) == [.connecting, .live])
                try await Self.waitForRecord(store, "items") { $0.id == id && $0.fields["n"] == 7 }
                await live.stop()
            }
            try await other.client.shutdown()
        }
    }

    @Test("a local delete hides the record at once and lands when pushed; an unsent create is created, then deleted")
    func deletesOffline() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            let created = try await ada.send(.post, "/records/items", ["n": 1])
            let id = try #require(created["id"]?.stringValue)
            try await SyncedStoreIntegrationTests.withStore(ada) { store in
                try await store.pull("items")
                try await store.patch("items", id: id, fields: ["n": 2])
                try await store.delete("items", id: id)
                let draft = try await store.create("items", fields: ["n": 3])
                try await store.patch("items", id: draft, fields: ["n": 4])
                try await store.delete("items", id: draft)
                #expect(try await store.query("items").isEmpty)
                #expect(try await store.status()["items"] == SyncTypeStatus(pending: 3, failed: 0))
                await #expect(throws: SyncError.self) { try await store.patch("items", id: id, fields: ["n": 5]) }

                try await store.push()
                #expect(try await store.status().isEmpty)
                #expect(try await SyncedStoreIntegrationTests.serverRecords(ada, "items").isEmpty)
                try await store.pull("items")
                #expect(try await store.query("items").isEmpty)
            }
        }
    }

    @Test("a delete of a record changed elsewhere: the server's record comes back, or it is deleted anyway")
    func deleteConflicts() async throws {
        for policy in [ConflictPolicy.serverWins, .clientWins] {
            try await withAuthFixture { fixture in
                let ada = try await User(fixture, "ada")
                let created = try await ada.send(.post, "/records/items", ["n": 1])
                let id = try #require(created["id"]?.stringValue)
                try await SyncedStoreIntegrationTests.withStore(ada, policies: ["items": policy]) { store in
                    try await store.pull("items")
                    _ = try await ada.send(.patch, "/records/items/\(id)", ["n": 2])
                    try await store.pull("items")
                    #expect(try await store.query("items").first?.version == 2)
                    try await store.delete("items", id: id)
                    _ = try await ada.send(.patch, "/records/items/\(id)", ["n": 3])
                    try await store.push()
                    var events: [ConflictEvent] = []
                    for await event in store.conflicts {
                        events.append(event)
                        break
                    }
                    let server = try await SyncedStoreIntegrationTests.serverRecords(ada, "items")
                    if case .serverWins = policy {
                        #expect(events.map(\.resolution) == [.serverWon])
                        #expect(server[id]?["n"] == 3)
                        let local = try #require(try await store.query("items").first)
                        #expect(local.state == .confirmed && local.fields["n"] == 3)
                    } else {
                        #expect(events.map(\.resolution) == [.clientWon])
                        #expect(server.isEmpty)
                        #expect(try await store.query("items").isEmpty)
                    }
                }
            }
        }
    }

    @Test("a type over its limit keeps its newest confirmed records and every record with local writes")
    func evictsOldest() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            for index in 0..<6 { _ = try await ada.send(.post, "/records/items", ["n": .int(index)]) }
            /// The ids of the `count` records updated last, as the store orders them.
            func newest(_ count: Int) async throws -> Set<String> {
                let server = try await SyncedStoreIntegrationTests.serverRecords(ada, "items")
                let ordered = server.values.sorted {
                    let a = ($0["updated_at"]?.stringValue ?? "", $0["id"]?.stringValue ?? "")
                    let b = ($1["updated_at"]?.stringValue ?? "", $1["id"]?.stringValue ?? "")
                    return a < b
                }
                return Set(ordered.suffix(count).compactMap { $0["id"]?.stringValue })
            }
            let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-sync-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let store = try SyncedStore(folder: folder, client: ada.client, limits: SyncLimits(types: ["items": 3]))
            try await store.pull("items")
            #expect(Set(try await store.query("items").map(\.id)) == (try await newest(3)))

            // An evicted record changed on the server comes back, as one of the newest.
            let all = try await SyncedStoreIntegrationTests.serverRecords(ada, "items")
            let evicted = try #require(Set(all.keys).subtracting(try await store.query("items").map(\.id)).first)
            // `updated_at` counts whole seconds, and ties go by id: the patch is newer than the records
            // made above only in a later second, so it waits for the clock to reach one.
            let latest = all.values.compactMap { $0["updated_at"]?.stringValue }.max() ?? ""
            let seconds = ISO8601DateFormatter()
            while seconds.string(from: Date()) <= latest { try await Task.sleep(for: .milliseconds(20)) }
            _ = try await ada.send(.patch, "/records/items/\(evicted)", ["n": 100])
            try await store.pull("items")
            let local = try await store.query("items")
            #expect(Set(local.map(\.id)) == (try await newest(3)))
            #expect(local.contains { $0.id == evicted && $0.fields["n"] == 100 })

            // A record with a local write stays beyond the limit.
            func updated(_ record: SyncedRecord) -> String { record.fields["updated_at"]?.stringValue ?? "" }
            let oldest = try #require(local.min { updated($0) < updated($1) })
            try await store.patch("items", id: oldest.id, fields: ["mine": true])
            for index in 0..<3 { _ = try await ada.send(.post, "/records/items", ["n": .int(200 + index)]) }
            try await store.pull("items")
            let after = try await store.query("items")
            #expect(after.count == 4)
            #expect(after.contains { $0.id == oldest.id && $0.state == .pending })
            #expect(Set(after.filter { $0.state == .confirmed }.map(\.id)) == (try await newest(3)))
            try await ada.client.shutdown()
        }
    }
}
