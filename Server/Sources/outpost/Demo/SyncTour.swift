import Foundation
import Outpost
import OutpostServer
import OutpostSync

/// The offline-first store: an app pulls notes into a `SyncedStore`, its server goes down, the app
/// still lists, searches and edits, a change is made elsewhere meanwhile, and when the server is
/// back on the same address the edits land once and the other change arrives.
enum SyncTour {
    static func run(client: OutpostClient, databasePath: String, folder: URL, log: TourLog) async throws {
        log.section("Offline-first store (OutpostSync)")
        let (tourServer, second) = try await TourServer.start(databasePath: databasePath, label: "outpost.server.sync-tour")
        let appClient = OutpostClient(configuration: .init(baseURL: second.baseURL, retry: .none))
        let storeFolder = folder.appending(path: "sync-tour")
        do {
            for text in ["pack the tent", "check the train times to the coast"] {
                _ = try await client.send(.post("/records/notes", json: ["text": .string(text)]))
            }
            let store = try SyncedStore(folder: storeFolder, client: appClient, policies: ["notes": .clientWins])
            try await store.pull("notes")
            let pulled = try await store.query("notes")
            log.step("The app pulled \(pulled.count) notes from \(second.baseURL) into \(store.fileURL.lastPathComponent)")
            await second.stop()
            log.step("The server is stopped; the app still lists, searches and edits")
            let wordy = try await store.query("notes", filter: "record.words >= 2", sort: "-words")
            log.detail("local query record.words >= 2, sorted by -words: \(wordy.count) notes, no network")
            let id = try await store.create("notes", fields: ["text": "written on a train without signal"])
            if let first = wordy.first {
                try await store.patch("notes", id: first.id, fields: ["text": "edited offline, then synced"])
            }
            for (type, counts) in try await store.status() {
                log.detail("\(type): \(counts.pending) writes pending, \(counts.failed) failed")
            }
            if (try? await store.push()) == nil { log.detail("push while the server is down: the writes stay pending") }

            // Meanwhile, another device writes through the demo's main server.
            let elsewhere = try await client.send(
                .post("/records/notes", json: ["text": "added on another device"])
            ).json()
            let elsewhereID = elsewhere["id"]?.stringValue ?? "?"

            let restarted = try await tourServer.restart()
            log.step("The server is back at \(restarted.baseURL); the app pushes, then catches up")
            do {
                try await store.push()
                try await store.pull("notes")
            } catch {
                await restarted.stop()
                throw error
            }
            await restarted.stop()
            for record in try await store.query("notes", sort: "-words") {
                let text = record.fields["text"]?.stringValue ?? ""
                let words = record.fields["words"].map { "\($0)" } ?? "?"
                log.detail("\(record.state.name)  \(record.id.prefix(8))…  words \(words)  \(text)")
            }
            let landed = try await client.send(
                .get("/records/notes", query: [URLQueryItem(name: "filter", value: #"record.text ^= "written on a train""#)])
            ).json()
            let copies = landed["results"]?.arrayValue?.count ?? 0
            let arrived = try await store.query("notes").contains { $0.id == elsewhereID }
            guard copies == 1, arrived else {
                throw DemoBrowser.Failure(
                    description: "the offline note is on the server \(copies) times; the other note arrived: \(arrived)")
            }
            log.detail("the offline note (local id \(id.prefix(14))…) is on the server once; the other device's note arrived")
        } catch {
            try? await appClient.shutdown()
            throw error
        }
        try await appClient.shutdown()
    }
}
