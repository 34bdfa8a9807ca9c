import Foundation
import Logging
import NIOPosix
import Outpost
import OutpostServer
import Testing

/// On PostgreSQL the server handles each HTTP connection on the connection's own event loop, so a
/// request is read, handled and answered without crossing threads (and a query from it uses that
/// loop's pool); on SQLite it stays on Swift's cooperative pool (the bench measured SQLite's reads
/// slower on the loops). Plugin code, which may block, runs off the loops either way. CI runs this
/// suite on both backends (`OUTPOST_TEST_LIVE_BACKEND`).
@Suite("Requests handled on their connection's event loop with PostgreSQL")
struct EventLoopHandlingTests {
    /// For each access-log line (written by a router middleware after the route answered, on the
    /// thread the request's task runs on once its storage calls are done): its path, and whether
    /// it was logged on a NIO event loop.
    static func probe() -> LogRecorder {
        LogRecorder { event, _ in
            guard event.message.description == "request", case .string(let path)? = event.metadata?["path"] else { return nil }
            return "\(MultiThreadedEventLoopGroup.currentEventLoop != nil) \(path)"
        }
    }

    /// A lambda that reports whether it runs on a NIO event loop.
    struct LoopProbe: ServerPlugin {
        let identifier = "outpost.tests.loop-probe"

        func register(into registrar: inout PluginRegistrar) throws {
            try registrar.lambda("on-event-loop") { _ in .bool(MultiThreadedEventLoopGroup.currentEventLoop != nil) }
        }
    }

    @Test(
        "Record and health requests are answered on an event loop with PostgreSQL (after their storage calls too), off the loops with SQLite"
    )
    func requestsRunOnTheirLoop() async throws {
        let onLoop = LiveServer.backend == .postgres
        let probe = Self.probe()
        try await withLiveServer(
            plugins: [LoopProbe()],
            configure: { configuration in configuration.logger = probe.logger(level: .info) }
        ) { _, client in
            let store = client.entities(.outpost)
            let pushed = try await store.push(Pet(id: nil, kind: "loop"))
            let id = try #require(pushed.id)
            let pulled = try await store.pull(Pet.self, id: id)
            #expect(pulled.value.kind == "loop")
            _ = try await client.send(.get("/records/pets")).json()
            _ = try await client.send(.get("/health")).json()
            // Plugin code (which may block) runs off the loops, under its deadline.
            #expect(try await client.callLambda("on-event-loop") == false)
        }
        let entries = probe.all
        let paths = Set(entries.map { $0.split(separator: " ")[1] })
        #expect(paths.isSuperset(of: ["/records/pets", "/health", "/lambdas/on-event-loop"]), "\(paths)")
        #expect(entries.count >= 5)
        for entry in entries {
            #expect(entry.hasPrefix("\(onLoop) "), "answered \(onLoop ? "off" : "on") its event loop: \(entry)")
        }
    }
}
