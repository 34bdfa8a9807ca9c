import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A minimal Hummingbird app for the client benchmarks: `GET /small` answers a fixed JSON object of
/// about 100 bytes. It listens on 127.0.0.1 on a free port and stops when ``stop()`` asks it to.
final class SmallJSONServer: Sendable {
    /// The object every `GET /small` returns (104 bytes).
    static let body = #"{"id":42,"name":"Ada Lovelace","email":"ada@example.com","active":true,"score":97.5,"tags":["a","b"]}"#

    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(port: Int, group: ServiceGroup, task: Task<Void, any Error>) {
        self.port = port
        self.group = group
        self.task = task
    }

    /// Starts the server and returns once it listens, on `eventLoopGroup` (NIO's shared singleton
    /// group, which the clients use too, when `nil`).
    static func start(eventLoopGroup: (any EventLoopGroup)? = nil) async throws -> SmallJSONServer {
        let router = Router()
        let bytes = ByteBuffer(string: body)
        router.get("/small") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: bytes))
        }
        var logger = Logger(label: "outpost.bench.small-server")
        logger.logLevel = .warning
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "outpost-bench"),
            onServerRunning: { channel in
                portSink.yield(channel.localAddress?.port ?? 0)
                portSink.finish()
            },
            eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton,
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task {
            defer { portSink.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            await group.triggerGracefulShutdown()
            _ = await task.result
            throw BenchError("the small JSON server did not start listening")
        }
        return SmallJSONServer(port: port, group: group, task: task)
    }

    /// `http://127.0.0.1:<port>`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Stops the server gracefully and waits until it has.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }
}

/// A benchmark that cannot go on, with what went wrong.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
