import Foundation
import Logging
import OutpostServer

/// A second server on the demo's database for the tours that stop it and start it again on the
/// same address (the outbox, the offline-first store). It logs only critical messages.
struct TourServer {
    let configuration: ServerConfiguration
    let port: Int

    /// Starts the second server on a fresh loopback port.
    static func start(databasePath: String, label: String) async throws -> (TourServer, RunningServer) {
        var logger = Logger(label: label)
        logger.logLevel = .critical
        let configuration = ServerConfiguration(host: "127.0.0.1", port: 0, databasePath: databasePath, logger: logger)
        let running = try await OutpostServer(configuration: configuration, plugins: [DemoPlugin()]).start()
        return (TourServer(configuration: configuration, port: running.port), running)
    }

    /// Starts it again on the address it had.
    func restart() async throws -> RunningServer {
        var again = configuration
        again.port = port
        return try await OutpostServer(configuration: again, plugins: [DemoPlugin()]).start()
    }
}
