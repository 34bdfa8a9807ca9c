import Foundation
import Outpost
import OutpostServer

/// The durable outbox: a second server on the demo's database goes down, writes are queued on
/// disk, the server comes back on the same address, and the replay lands each write exactly once.
enum OutboxTour {
    struct Chore: Entity {
        static let resourcePath = "records/outbox-tour"
        var id: String?
        var title: String
        var done: Bool
    }

    static func run(client: OutpostClient, databasePath: String, log: TourLog) async throws {
        log.section("Durable outbox")
        let (tourServer, second) = try await TourServer.start(databasePath: databasePath, label: "outpost.server.outbox-tour")
        let address = second.baseURL
        log.step("A second server on the same database at \(address)")
        let appClient = OutpostClient(configuration: .init(baseURL: address, retry: .none))
        let store = appClient.entities(.outpost)
        var existing = try await store.push(Chore(title: "Write the outbox article", done: false))
        log.detail("pushed \(existing.id ?? "?") while online (ETag \(existing.etag ?? "none"))")
        await second.stop()
        log.step("The server is stopped; the app keeps writing")

        let folder = URL(fileURLWithPath: databasePath).deletingLastPathComponent()
        let journal = folder.appendingPathComponent("outbox.journal")
        var outboxConfiguration = Outbox.Configuration(fileURL: journal)
        outboxConfiguration.retry = RetryPolicy(maxAttempts: 1)
        do {
            let outbox = try await Outbox.open(outboxConfiguration, client: appClient)
            var created = Synced(Chore(title: "Queued while offline", done: false))
            try await store.enqueuePush(&created, in: outbox)
            existing.done = true
            try await store.enqueuePatch(&existing, in: outbox)
            try await outbox.enqueue(.post("/records/outbox-tour", json: ["title": "A plain durable request", "done": false]))
            for entry in try await outbox.entries {
                log.detail("pending: \(entry.label)  Idempotency-Key \(entry.idempotencyKey.prefix(8))…")
            }
            let attributes = try FileManager.default.attributesOfItem(atPath: journal.path)
            let mode = (attributes[.posixPermissions] as? Int).map { String($0, radix: 8) } ?? "?"
            log.detail("journal \(journal.lastPathComponent): \(attributes[.size] ?? 0) bytes, mode \(mode), fsync'd per write")
            let offline = await outbox.replay()
            log.step("Replay while the server is down: \(offline.deferred) writes wait, nothing is lost")
            await outbox.close()
        }

        // The server comes back on the same address, and the app starts again (a new Outbox reads the journal).
        let restarted = try await tourServer.restart()
        log.step("The server is back at \(restarted.baseURL); the app reopens its outbox and replays")
        do {
            let outbox = try await Outbox.open(outboxConfiguration, client: appClient)
            let events = outbox.events()
            let summary = await outbox.replay()
            await outbox.close()
            for await event in events {
                guard case .completed(let done) = event else { continue }
                log.detail("sent: \(done.entry.label) → \(done.status)\(done.etag.map { ", ETag \($0)" } ?? "")")
            }
            log.detail("\(summary.completed) sent, \(summary.failed) refused, \(summary.deferred) waiting")
        } catch {
            await restarted.stop()
            try? await appClient.shutdown()
            throw error
        }
        await restarted.stop()
        try await appClient.shutdown()

        // Seen through the demo's main server: each write exactly once.
        let list = try await client.send(.get("/records/outbox-tour?page=1&per_page=20")).json()
        for record in list["results"]?.arrayValue ?? [] {
            log.detail(
                "on the server: \(record["title"]?.stringValue ?? "?") (done: \(record["done"]?.boolValue == true))")
        }
        log.step("\(list["total"]?.intValue ?? 0) records, each once, the patch included")
    }
}
