import Foundation
import Hummingbird
import Logging

/// Runs a small Hummingbird router on 127.0.0.1 port 0 for a test's own fake server.
enum LocalApplication {
    /// Starts `router` and returns its base URL (`http://127.0.0.1:PORT`) and a function that stops it.
    static func start(_ router: Router<BasicRequestContext>, label: String) async throws -> (URL, @Sendable () async -> Void) {
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        var quiet = Logger(label: label)
        quiet.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { sink.yield($0.localAddress?.port ?? 0) }, logger: quiet)
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ports.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        return (
            URL(string: "http://127.0.0.1:\(port)")!,
            {
                task.cancel(); _ = await task.result
            }
        )
    }
}
