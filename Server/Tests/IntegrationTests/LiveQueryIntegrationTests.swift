import Foundation
import Observation
import Outpost
import OutpostServer
import OutpostSync
import OutpostTestSupport
import Testing

/// `LiveQuery` against a live server: a synced store's local write is pending, then confirmed
/// after a push; changes from another client appear through a pull and through `follow`; a
/// refused push shows failed; an entity store's list follows the change feed and its outbox.
@Suite("Live queries on a live server", .closesWhatItOpens, .timeLimit(.minutes(3)))
struct LiveQueryIntegrationTests {
    typealias User = SyncedStoreIntegrationTests.User

    struct Item: Entity, Equatable {
        static let resourcePath = "records/items"
        var id: String?
        var text: String
    }

    @MainActor
    static func touch<T>(_ query: LiveQuery<T>) {
        _ = query.records
        _ = query.isLoading
        _ = query.error
    }

    /// Waits until `done` holds, re-checking at each change of `query`.
    @MainActor
    static func wait<T>(for query: LiveQuery<T>, until done: @MainActor () -> Bool) async {
        _ = await changes(of: { touch(query) }, until: done)
    }

    @Test("a local write shows pending at once, then confirmed with the server's id after a push")
    func pendingThenConfirmed() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            try await SyncedStoreIntegrationTests.withStore(ada) { store in
                let query = await LiveQuery(store, Item.self)
                await Self.wait(for: query) { !query.isLoading }
                let local = try await store.create("items", fields: ["text": "draft"])
                await Self.wait(for: query) { query.state(of: local) != nil }
                #expect(await query.records.map(\.state) == [.pending])
                #expect(await query.items.map(\.text) == ["draft"])

                try await store.push()
                await Self.wait(for: query) { query.records.first?.state == .confirmed }
                let confirmed = try #require(await query.records.first)
                #expect(confirmed.id != local && !confirmed.id.hasPrefix("local-") && confirmed.value.id == confirmed.id)
                let server = try await SyncedStoreIntegrationTests.serverRecords(ada, "items")
                #expect(Array(server.keys) == [confirmed.id])
                await query.stop()
            }
        }
    }

    @Test("another client's records appear through a pull and through a live follow")
    func otherClientsChangesAppear() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            let other = try await User(fixture, "ada")
            try await SyncedStoreIntegrationTests.withStore(ada) { store in
                let query = await LiveQuery(store, Item.self, filter: #"record.text ^= "keep""#, sort: "-text")
                await Self.wait(for: query) { !query.isLoading }
                _ = try await other.send(.post, "/records/items", ["text": "keep 1"])
                _ = try await other.send(.post, "/records/items", ["text": "drop"])
                try await store.pull("items")
                await Self.wait(for: query) { !query.items.isEmpty }
                #expect(await query.items.map(\.text) == ["keep 1"])
                #expect(await query.records.map(\.state) == [.confirmed])

                let live = try store.follow("items", resume: ManualResumeSignals())
                let created = try await other.send(.post, "/records/items", ["text": "keep 2"])
                let id = try #require(created["id"]?.stringValue)
                await Self.wait(for: query) { query.state(of: id) != nil }
                #expect(await query.items.map(\.text) == ["keep 2", "keep 1"])
                _ = try await other.send(.patch, "/records/items/\(id)", ["text": "dropped now"])
                await Self.wait(for: query) { query.state(of: id) == nil }
                #expect(await query.items.map(\.text) == ["keep 1"])
                await live.stop()
                await query.stop()
            }
            try await other.client.shutdown()
        }
    }

    @Test("a write the server refuses shows failed, with the server's reason")
    func refusedWriteFails() async throws {
        try await withAuthFixture(
            configure: { $0.accessRules = try! AccessRuleSet(["items": ["create": "record.text != \"no\""]]) }
        ) { fixture in
            let ada = try await User(fixture, "ada")
            try await SyncedStoreIntegrationTests.withStore(ada) { store in
                let query = await LiveQuery(store, Item.self, sort: "text")
                let refused = try await store.create("items", fields: ["text": "no"])
                try await store.create("items", fields: ["text": "yes"])
                await Self.wait(for: query) { query.records.count == 2 }
                try await store.push()
                await Self.wait(for: query) { query.state(of: refused)?.failure != nil }
                #expect(await query.records.map(\.state.isPending) == [false, false])
                #expect(await query.records.last?.state == .confirmed)
                #expect(await query.items.map(\.text) == ["no", "yes"])
                await query.stop()
            }
        }
    }

    @Test("an entity store's query follows the change feed, and its outbox's writes show pending until sent")
    func entityStoreQuery() async throws {
        try await withAuthFixture { fixture in
            let ada = try await User(fixture, "ada")
            let other = try await User(fixture, "ada")
            let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-live-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            var configuration = Outbox.Configuration(fileURL: folder.appending(path: "outbox.journal"))
            configuration.retry = RetryPolicy(maxAttempts: 1)
            let outbox = try await Outbox.open(configuration, client: ada.client)
            let store = ada.client.entities()
            var first = try await store.push(Item(text: "a"))
            let query = await LiveQuery(store, Item.self, sort: "text", outbox: outbox)
            await Self.wait(for: query) { query.items.map(\.text) == ["a"] }

            let created = try await other.send(.post, "/records/items", ["text": "b"])
            await Self.wait(for: query) { query.items.count == 2 }
            #expect(await query.items.map(\.text) == ["a", "b"])
            #expect(await query.items.last?.id == created["id"]?.stringValue)

            first.text = "a, edited"
            try await store.enqueuePatch(&first, in: outbox)
            let id = try #require(first.id)
            await Self.wait(for: query) { query.state(of: id) == .pending }
            #expect(await query.items.first?.text == "a")
            #expect(await outbox.replay().completed == 1)
            await Self.wait(for: query) { query.state(of: id) == .confirmed && query.items.first?.text == "a, edited" }
            await query.stop()
            await outbox.close()
            try await other.client.shutdown()
            try await ada.client.shutdown()
        }
    }
}
