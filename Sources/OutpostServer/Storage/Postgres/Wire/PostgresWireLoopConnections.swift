import Logging
import NIOCore
import NIOPosix

/// One lean connection per event loop, all preparing the same statements: what
/// ``PostgresWireReads`` and ``PostgresWireInserts`` each hold. A request runs on an event loop,
/// and its loop's connection writes, reads and resumes it there.
final class PostgresWireLoopConnections: Sendable {
    let connections: [PostgresWireConnection]
    let byLoop: [ObjectIdentifier: PostgresWireConnection]
    let openCount: OpenConnectionCount
    let logger: Logger
    let location: PostgresLocation
    /// What the connections do, for log lines ("record and token reads", "record inserts").
    let purpose: String

    private init(
        connections: [PostgresWireConnection], openCount: OpenConnectionCount, logger: Logger, location: PostgresLocation,
        purpose: String
    ) {
        self.connections = connections
        self.byLoop = Dictionary(uniqueKeysWithValues: connections.map { (ObjectIdentifier($0.loop), $0) })
        self.openCount = openCount
        self.logger = logger
        self.location = location
        self.purpose = purpose
    }

    /// Opens one connection per loop of `loops`, or returns `nil` (and logs why at `info`) when
    /// the database is one the lean connections do not serve: postgres-nio then does their work.
    ///
    /// - Throws: the reason a connection failed when the database refuses it (a wrong password,
    ///   a missing database), as postgres-nio's own check would.
    static func open(
        _ location: PostgresLocation, loops: [any EventLoop], busyTimeout: Duration, statements: [PostgresWireStatement],
        applicationName: String? = nil, purpose: String, logger: Logger
    ) async throws -> PostgresWireLoopConnections? {
        var settings = PostgresWireSettings(
            username: location.username, password: location.password, database: location.database,
            askForTLS: location.tls == .prefer, statements: statements,
            lockTimeoutMilliseconds: max(1, IdempotencyRow.milliseconds(busyTimeout)))
        if let applicationName { settings.applicationName = applicationName }
        let count = OpenConnectionCount()
        let connections = loops.map {
            PostgresWireConnection(loop: $0, host: location.host, port: location.port, settings: settings, openCount: count)
        }
        let set = PostgresWireLoopConnections(
            connections: connections, openCount: count, logger: logger, location: location, purpose: purpose)
        do {
            for connection in connections { try await connection.open() }
        } catch {
            await set.close()
            if case .unsupported(let reason)? = error as? PostgresWireError {
                logger.info("\(purpose) use postgres-nio", metadata: ["reason": "\(reason)"])
                return nil
            }
            throw error
        }
        return set
    }

    /// The connection of the current event loop, or any when the caller runs on none of them.
    var connection: PostgresWireConnection {
        if let loop = MultiThreadedEventLoopGroup.currentEventLoop, let connection = byLoop[ObjectIdentifier(loop)] {
            return connection
        }
        return connections.randomElement() ?? connections[0]
    }

    /// Lean connections of this set open now.
    var openConnections: Int { openCount.value.load(ordering: .relaxed) }

    /// As ``PostgresStorage/translatingErrors(_:)``: lock waits, deadlocks and cancellations are
    /// 503 `storage_busy`; a lost or unusable connection is 503 `storage_unavailable` (the next
    /// query opens a new one); other database errors pass through (500).
    nonisolated(nonsending) func translatingErrors<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresWireError {
            if case .server(let state, _, let message) = error, !error.endsConnection {
                if PostgresStorage.busyStates.contains(state) { throw PostgresStorage.busy }
                logger.error("\(purpose) failed", metadata: ["sqlstate": "\(state)", "error": "\(message)"])
                throw error
            }
            logger.warning("database unreachable", metadata: ["database": "\(location)", "error": "\(error)"])
            throw PostgresStorage.unavailable
        }
    }

    /// Closes every connection (each ends its session first) and waits until they are closed.
    func close() async {
        for connection in connections { await connection.close() }
    }
}
