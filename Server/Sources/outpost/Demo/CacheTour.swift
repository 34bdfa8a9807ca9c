import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import Synchronization

/// The HTTP cache: a fresh hit that never reaches the server, a record revalidated with a 304, and
/// a stale answer once the server is gone.
enum CacheTour {
    static func run(databasePath: String, folder: URL, log: TourLog) async throws {
        log.section("HTTP cache")
        // A second server on the same database, so this tour can stop it without ending the demo.
        var logger = Logger(label: "outpost.server")
        logger.logLevel = .warning
        let server = try await OutpostServer(
            configuration: ServerConfiguration(host: "127.0.0.1", port: 0, databasePath: databasePath, logger: logger),
            plugins: [DemoPlugin()]
        ).start()
        let sent = Mutex(0)
        // Below the cache: counts what really goes out.
        let counting = ClosureMiddleware { request, body, _, next in
            sent.withLock { $0 += 1 }
            return try await next(request, body)
        }
        let cache = HTTPCache(
            configuration: .init(directory: folder.appending(path: "http-cache"), serveStaleWhenOffline: true))
        var configuration = OutpostClient.Configuration(baseURL: server.baseURL)
        configuration.retry.maxAttempts = 1
        let client = OutpostClient(configuration: configuration, middlewares: [cache, counting])
        do {
            try await tour(client, cache: cache, sent: { sent.withLock { $0 } }, stop: { await server.stop() }, log: log)
        } catch {
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
    }

    static func tour(
        _ client: OutpostClient, cache: HTTPCache, sent: () -> Int, stop: () async -> Void, log: TourLog
    ) async throws {
        let first = try await client.send(.get("/openapi.json"))
        let second = try await client.send(.get("/openapi.json"))
        log.step("GET /openapi.json twice (Cache-Control: \(first.headerFields[.cacheControl] ?? "-"))")
        log.detail(
            "first: \(status(first)); second: \(status(second)), Age \(second.headerFields[.age] ?? "-"); requests sent: \(sent())"
        )

        let note = try await client.send(.post("/records/notes", json: ["text": "cache me"])).json()
        let path = "/records/notes/\(note["id"]?.stringValue ?? "")"
        let read = try await client.send(.get(path))
        log.step(
            "GET \(path) → \(status(read)), ETag \(read.headerFields[.eTag] ?? "-"), Cache-Control: \(read.headerFields[.cacheControl] ?? "-")"
        )
        let before = sent()
        let again = try await client.send(.get(path))
        log.step("GET \(path) again → the cache sends If-None-Match, the server answers 304 Not Modified")
        log.detail(
            "the caller gets \(status(again)) with the stored body: \(again.body.count) bytes, \(sent() - before) request sent")

        await cache.flush()
        log.step(
            "memory tier \(cache.memoryBytes) bytes, disk tier \(await cache.diskBytes()) bytes (files 0600, keyed by a hash of the account)"
        )

        await stop()
        let stale = try await client.send(.get(path))
        log.step(
            "the server stops; GET \(path) → \(status(stale)), Age \(stale.headerFields[.age] ?? "-") (serveStaleWhenOffline)")
    }

    static func status(_ response: ClientResponse) -> String {
        "\(response.status) [\(response.cacheStatus?.rawValue ?? "no cache")]"
    }
}
