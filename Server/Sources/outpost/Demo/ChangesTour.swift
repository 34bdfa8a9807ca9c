import Foundation
import Outpost

/// A shared shopping list item, watched live by a second client.
struct ListItem: Entity {
    static let resourcePath = "records/groceries"
    var id: String?
    var name: String
    var done: Bool
}

/// Live changes: a second client subscribes to a type and sees the first client's writes as they
/// happen, then resumes from its last position after disconnecting.
enum ChangesTour {
    static func run(baseURL: URL, log: TourLog) async throws {
        log.section("Live changes")
        let first = OutpostClient(configuration: .init(baseURL: baseURL))
        let second = OutpostClient(configuration: .init(baseURL: baseURL))
        do {
            try await tour(first: first.entities(), second: second.entities(), log: log)
        } catch {
            try? await first.shutdown()
            try? await second.shutdown()
            throw error
        }
        try await first.shutdown()
        try await second.shutdown()
    }

    static func tour(first: EntityStore, second: EntityStore, log: TourLog) async throws {
        var milk = try await first.push(ListItem(name: "milk", done: false))
        log.step("Client 1 pushes ListItem(\"milk\") → id \(milk.id ?? "?")")
        // Resume from just before the item existed, so the subscription cannot miss the patch below.
        var changes = second.changes(of: ListItem.self, after: "0").makeAsyncIterator()
        log.step("Client 2 subscribes: store.changes(of: ListItem.self) → GET /records/groceries/changes (Server-Sent Events)")
        guard let created = try await changes.next() else { return }
        log.detail("client 2 sees: \(created.kind) \(created.id) v\(created.version) (position \(created.position))")
        milk.done = true
        milk = try await first.patch(milk)
        log.step("Client 1 patches done = true → ETag \(milk.etag ?? "-")")
        guard let updated = try await changes.next() else { return }
        log.detail(
            "client 2 sees: \(updated.kind) \(updated.id) v\(updated.version), done = \(updated.entity?.value.done == true)")
        let resumeAt = updated.position
        try await first.delete(milk)
        log.step("Client 1 deletes it while client 2 is away; client 2 resumes after position \(resumeAt)")
        var resumed = second.changes(of: ListItem.self, after: resumeAt).makeAsyncIterator()
        guard let deleted = try await resumed.next() else { return }
        log.detail("client 2 sees: \(deleted.kind) \(deleted.id) v\(deleted.version): nothing missed, nothing twice")
    }
}
