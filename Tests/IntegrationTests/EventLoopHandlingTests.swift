import Foundation
import Logging
import NIOPosix
import Outpost
import OutpostServer
import Synchronization
import Testing

/// The server handles each HTTP connection on the connection's own event loop, so a request is
/// read, handled and answered without crossing threads (and a PostgreSQL query from it uses that
/// loop's pool); plugin code, which may block, still runs off the loops.
@Suite("Requests handled on their connection's event loop")
struct EventLoopHandlingTests {
    /// Records, for each access-log line, its path and whether it was logged on a NIO event loop.
    /// The access log is written by a router middleware after the route answered: on the thread
    /// the request's task runs on once its storage calls are done.
    final class ThreadProbe: LogHandler, @unchecked Sendable {
        // `@unchecked`: the entries are behind a mutex; the rest is the handler's value state.
        let entries = Mutex<[(path: String, onLoop: Bool)]>([])
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.message.description == "request", case .string(let path)? = event.metadata?["path"] else { return }
            let onLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
            entries.withLock { $0.append((path, onLoop)) }
        }
    }

    /// A lambda that reports whether it runs on a NIO event loop.
    struct LoopProbe: ServerPlugin {
        let identifier = "outpost.tests.loop-probe"

        func register(into registrar: inout PluginRegistrar) throws {
            try registrar.lambda("on-event-loop") { _ in .bool(MultiThreadedEventLoopGroup.currentEventLoop != nil) }
        }
    }

    @Test("Record and health requests are answered on an event loop, after their storage calls too")
    func requestsRunOnTheirLoop() async throws {
        let probe = ThreadProbe()
        try await withLiveServer(
            plugins: [LoopProbe()],
            configure: { configuration in
                configuration.logger = Logger(label: "outpost.test.loop-probe") { _ in probe }
            }
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
        let entries = probe.entries.withLock { $0 }
        let paths = Set(entries.map(\.path))
        #expect(paths.isSuperset(of: ["/records/pets", "/health", "/lambdas/on-event-loop"]), "\(paths)")
        #expect(entries.count >= 5)
        for entry in entries {
            #expect(entry.onLoop, "\(entry.path) was answered off its event loop")
        }
    }
}
