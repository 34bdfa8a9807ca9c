import Foundation
import Observation
import OutpostCore
import OutpostSync
import OutpostTestSupport
import Synchronization
import Testing

/// `LiveQuery` over a real `SyncedStore` in a temporary file: the store's filter, sort and states,
/// changes as local writes commit, coalesced notifications, and an end when stopped.
@Suite(.timeLimit(.minutes(2))) struct SyncedLiveQueryTests {
    struct Note: Entity, Equatable {
        static let resourcePath = "records/notes"
        var id: String?
        var title: String
        var rank: Int?
    }

    /// A store in a fresh temporary folder, removed afterwards.
    @MainActor
    static func withStore(_ body: @MainActor (SyncedStore) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "outpost-live-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(try SyncedStore(folder: folder))
    }

    @MainActor
    static func touch<Item>(_ query: LiveQuery<Item>) {
        _ = query.records
        _ = query.isLoading
        _ = query.error
    }

    @Test @MainActor func itSelectsAndOrdersAsTheStoreDoesAndFollowsLocalWrites() async throws {
        try await Self.withStore { store in
            try await store.create("notes", fields: ["title": "b", "rank": 2])
            let a = try await store.create("notes", fields: ["title": "a", "rank": 1])
            try await store.create("notes", fields: ["title": "hidden", "rank": 0])
            try await store.create("other", fields: ["title": "another type", "rank": 9])
            let query = LiveQuery(store, Note.self, filter: "record.rank > 0", sort: "-rank")
            #expect(query.isLoading)
            _ = await changes(of: { Self.touch(query) }, until: { !query.isLoading })
            #expect(query.items == [Note(id: query.records[0].id, title: "b", rank: 2), Note(id: a, title: "a", rank: 1)])
            #expect(query.records.map(\.state) == [.pending, .pending])
            #expect(query.error == nil)

            try await store.patch("notes", id: a, fields: ["rank": 5])
            _ = await changes(of: { Self.touch(query) }, until: { query.items.first?.title == "a" })
            #expect(query.items.map(\.title) == ["a", "b"])

            try await store.patch("notes", id: a, fields: ["rank": 0])
            _ = await changes(of: { Self.touch(query) }, until: { query.items.count == 1 })
            #expect(query.items.map(\.title) == ["b"] && query.state(of: a) == nil)

            let c = try await store.create("notes", fields: ["title": "c", "rank": 3])
            _ = await changes(of: { Self.touch(query) }, until: { query.items.count == 2 })
            #expect(query.items.map(\.title) == ["c", "b"] && query.state(of: c) == .pending)

            try await store.delete("notes", id: c)
            _ = await changes(of: { Self.touch(query) }, until: { query.items.count == 1 })
            #expect(query.items.map(\.title) == ["b"])
            query.stop()
        }
    }

    @Test @MainActor func aBurstOfWritesNotifiesAtMostOncePerWrite() async throws {
        try await Self.withStore { store in
            let query = LiveQuery(store, Note.self, sort: "rank")
            _ = await changes(of: { Self.touch(query) }, until: { !query.isLoading })
            let count = 100
            let writes = Task.detached {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for rank in 0..<count {
                        group.addTask { try await store.create("notes", fields: ["title": "n", "rank": .int(rank)]) }
                    }
                    try await group.waitForAll()
                }
            }
            let counter = ChangeCounter { _ = query.records }
            var seen: [Int] = []
            let notifications = await changes(
                of: { Self.touch(query) },
                until: {
                    seen.append(query.records.count)
                    return query.records.count == count
                })
            try await writes.value
            // Each change shows a whole answer of the store (the counts only grow), and there are
            // never more changes than writes, nor more updates applied.
            #expect(notifications >= 1 && notifications <= counter.count && counter.count <= count)
            #expect(seen == seen.sorted())
            #expect(query.items.compactMap(\.rank) == Array(0..<count))
            query.stop()
        }
    }

    @Test @MainActor func stoppingEndsTheUpdates() async throws {
        try await Self.withStore { store in
            let stopped = LiveQuery(store, Note.self)
            let running = LiveQuery(store, Note.self)
            _ = await changes(
                of: {
                    Self.touch(stopped); Self.touch(running)
                }, until: { !stopped.isLoading && !running.isLoading })
            stopped.stop()
            let notified = Flag()
            withObservationTracking({ Self.touch(stopped) }, onChange: { notified.set() })
            try await store.create("notes", fields: ["title": "after"])
            _ = await changes(of: { Self.touch(running) }, until: { running.items.count == 1 })
            await MainActor.run {}
            #expect(stopped.isStopped && stopped.items.isEmpty && !notified.isSet)
            running.stop()
        }
    }

    @Test @MainActor func aBadFilterOrARecordThatDoesNotDecodeShowsAnError() async throws {
        try await Self.withStore { store in
            let bad = LiveQuery(store, Note.self, filter: "record.rank >")
            _ = await changes(of: { Self.touch(bad) }, until: { !bad.isLoading })
            #expect(bad.error is SyncError && bad.items.isEmpty)

            try await store.create("notes", fields: ["title": "fine"])
            try await store.create("notes", fields: ["rank": 1])
            let query = LiveQuery(store, Note.self)
            _ = await changes(of: { Self.touch(query) }, until: { !query.isLoading })
            #expect(query.items.map(\.title) == ["fine"])
            #expect(query.error is DecodingError)
            query.stop()
        }
    }
}

/// A flag set from any thread.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
