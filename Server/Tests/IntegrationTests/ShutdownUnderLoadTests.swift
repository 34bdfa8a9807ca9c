import AsyncHTTPClient
import Foundation
import Outpost
import OutpostServer
@_spi(OutpostInternal) import OutpostSupport
import OutpostTestSupport
import Testing

/// Stopping a server while clients write, read and stream: the change feed and the HTTP server
/// stop before the storage closes, so no query reaches a closed connection.
@Suite("Shutdown under load", .closesWhatItOpens, .timeLimit(.minutes(2)))
struct ShutdownUnderLoadTests {
    /// What one load task did before the server went away.
    struct LoadEnd: Sendable {
        var rounds: Int
        var error: (any Error)?
    }

    @Test(
        "a stop mid-load: writers and readers end with connection errors only, the stream ends, nothing is logged, all is closed")
    func stopMidLoad() async throws {
        let recorder = LogRecorder()
        let tally = OpenResources()
        let server = try await OpenResources.$current.withValue(tally) {
            try await LiveServer.start { configuration in
                configuration.logger = recorder.logger(level: .warning)
                configuration.changes.heartbeatInterval = .milliseconds(50)
            }
        }
        // The server and its storage: on SQLite an admin, a writer and two read-only connections.
        #expect(tally.open == (LiveServer.backend == .sqlite ? 5 : 2))
        let http = ChangesIntegrationTests.rawClient()
        let client = OutpostClient(configuration: .init(baseURL: server.baseURL, retry: .none))
        do {
            let stream = try await RawEventStream.open(http, server.baseURL.absoluteString + "/records/notes/changes")
            #expect(stream.status == 200)
            #expect(try await stream.next()?.event == "ready")
            // Each write wakes the change feed, whose reads race the shutdown.
            let streamEnded = Task { try await stream.readToEnd() }

            let (progress, progressed) = AsyncStream.makeStream(of: Void.self)
            let loaders = (0..<6).map { index in
                Task { () -> LoadEnd in
                    var rounds = 0
                    while true {
                        do {
                            let created = try await client.send(
                                .post("/records/notes", json: ["text": .string("load \(index) round \(rounds)")])
                            ).json()
                            let id = try #require(created["id"]?.stringValue)
                            _ = try await client.send(.get("/records/notes/\(id)"))
                            _ = try await client.send(.get("/records/notes", query: [URLQueryItem(name: "limit", value: "5")]))
                            rounds += 1
                            progressed.yield()
                        } catch {
                            return LoadEnd(rounds: rounds, error: error)
                        }
                    }
                }
            }
            // Mid-load: every loader keeps going while the server stops.
            var completed = 0
            for await _ in progress {
                completed += 1
                if completed == 18 { break }
            }
            await server.running.stop()
            // Hold the port so that no server another test starts takes it and answers the loaders.
            let gone = try ClosedPort(port: server.baseURL.port ?? 0)
            defer { gone.release() }
            #expect(tally.open == 0, "the storage and the server are closed once stop() returns")
            progressed.finish()

            var ends: [LoadEnd] = []
            for loader in loaders { ends.append(await loader.value) }
            #expect(ends.reduce(0) { $0 + $1.rounds } >= 18)
            for end in ends {
                let error = try #require(end.error)
                let code = (error as? OutpostError)?.code
                // Refused or cut connections only: never a 5xx, which a query on a closed storage would give.
                #expect(code == .cannotConnect || code == .connectionLost, "\(error)")
            }
            #expect(try await streamEnded.value, "the change stream ends when the server stops")
            #expect(recorder.all.isEmpty, "nothing went wrong in the server while it stopped: \(recorder.all)")
        } catch {
            Issue.record(error)
        }
        try await client.shutdown()
        try await http.shutdown()
        await server.stop()
    }
}
