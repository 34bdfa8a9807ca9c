import Logging
import NIOCore
import NIOPosix

/// Record inserts (`POST /records/{type}` without an `Idempotency-Key`) on lean connections of the
/// storage's own, one per event loop, next to the read ones (``PostgresWireReads``), instead of
/// postgres-nio's pools.
///
/// An insert is one statement in autocommit: Bind/Execute/Sync, which PostgreSQL commits at the
/// Sync, before the ReadyForQuery that completes the query. So a record is reported created only
/// once PostgreSQL has committed it, as through postgres-nio. A request runs on an event loop, and
/// its loop's connection writes, reads and resumes it there: no pool lease, no row sequence, no
/// hand-off. Inserts inside a transaction (with an `Idempotency-Key`) stay on postgres-nio.
///
/// Opened only where the read connections are (no TLS required, an authentication method they
/// speak), and not with `OUTPOST_POSTGRES_LEAN_WRITES=0`.
final class PostgresWireInserts: Sendable {
    let connections: [PostgresWireConnection]
    let byLoop: [ObjectIdentifier: PostgresWireConnection]
    let openCount: OpenConnectionCount
    let logger: Logger
    let location: PostgresLocation

    /// The one statement each connection prepares.
    static let statements = [
        PostgresWireStatement(
            name: PostgresStorage.InsertRecord.name, sql: PostgresStorage.InsertRecord.sql,
            parameterTypes: [0, 0, 0, 0, 0, 0], binaryResults: PostgresWireReads.recordResults)
    ]
    /// How the connections appear in `pg_stat_activity`.
    static let applicationName = "outpost-writes"

    private init(
        connections: [PostgresWireConnection], openCount: OpenConnectionCount, logger: Logger, location: PostgresLocation
    ) {
        self.connections = connections
        self.byLoop = Dictionary(uniqueKeysWithValues: connections.map { (ObjectIdentifier($0.loop), $0) })
        self.openCount = openCount
        self.logger = logger
        self.location = location
    }

    /// Opens one connection per loop of `loops` (the caller has checked that the database is one
    /// the lean connections serve: the read connections opened), or returns `nil` when a connection
    /// finds it is not after all: postgres-nio then inserts.
    static func open(_ location: PostgresLocation, loops: [any EventLoop], busyTimeout: Duration, logger: Logger)
        async throws -> PostgresWireInserts?
    {
        var settings = PostgresWireSettings(
            username: location.username, password: location.password, database: location.database,
            askForTLS: location.tls == .prefer, statements: statements,
            lockTimeoutMilliseconds: max(1, IdempotencyRow.milliseconds(busyTimeout)))
        settings.applicationName = applicationName
        let count = OpenConnectionCount()
        let connections = loops.map {
            PostgresWireConnection(loop: $0, host: location.host, port: location.port, settings: settings, openCount: count)
        }
        let inserts = PostgresWireInserts(connections: connections, openCount: count, logger: logger, location: location)
        do {
            for connection in connections { try await connection.open() }
        } catch {
            await inserts.close()
            if case .unsupported(let reason)? = error as? PostgresWireError {
                logger.info("record inserts use postgres-nio", metadata: ["reason": "\(reason)"])
                return nil
            }
            throw error
        }
        return inserts
    }

    /// The connection of the current event loop, or any when the caller runs on none of them.
    var connection: PostgresWireConnection {
        if let loop = MultiThreadedEventLoopGroup.currentEventLoop, let connection = byLoop[ObjectIdentifier(loop)] {
            return connection
        }
        return connections.randomElement() ?? connections[0]
    }

    /// Lean insert connections open now.
    var openConnections: Int { openCount.value.load(ordering: .relaxed) }

    /// Inserts `record` (committed when this returns); `nil` when its id is taken.
    func insert(_ record: PostgresStorage.InsertRecord) async throws -> StoredRecord? {
        let parameters: [PostgresWireValue] = [
            .text(record.type), .text(record.id), PostgresWireValue(record.owner), .text(record.body), .integer(record.now),
            .text(record.isPrivate ? "true" : "false"),
        ]
        let rows: [ByteBuffer]
        do {
            rows = try await connection.query(0, parameters)
        } catch let error as PostgresWireError {
            throw translated(error)
        }
        return try rows.first.map(PostgresWireReads.record(from:))
    }

    /// As the read connections translate theirs: lock waits, deadlocks and cancellations are 503
    /// `storage_busy`; a lost or unusable connection is 503 `storage_unavailable` (the next insert
    /// opens a new one); other database errors pass through (500).
    private func translated(_ error: PostgresWireError) -> any Error {
        if case .server(let state, _, let message) = error, !error.endsConnection {
            if PostgresStorage.busyStates.contains(state) { return PostgresStorage.busy }
            logger.error("record insert failed", metadata: ["sqlstate": "\(state)", "error": "\(message)"])
            return error
        }
        logger.warning("database unreachable", metadata: ["database": "\(location)", "error": "\(error)"])
        return PostgresStorage.unavailable
    }

    /// Closes every connection (each ends its session first) and waits until they are closed.
    func close() async {
        for connection in connections { await connection.close() }
    }
}
