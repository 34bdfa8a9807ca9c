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
    let lean: PostgresWireLoopConnections

    /// The one statement each connection prepares.
    static let statements = [
        PostgresWireStatement(
            name: PostgresStorage.InsertRecord.name, sql: PostgresStorage.InsertRecord.sql,
            parameterTypes: [0, 0, 0, 0, 0, 0], binaryResults: PostgresWireReads.recordResults)
    ]
    /// How the connections appear in `pg_stat_activity`.
    static let applicationName = "outpost-writes"

    private init(_ lean: PostgresWireLoopConnections) {
        self.lean = lean
    }

    /// Opens one connection per loop of `loops` (the caller has checked that the database is one
    /// the lean connections serve: the read connections opened), or returns `nil` when a connection
    /// finds it is not after all: postgres-nio then inserts.
    static func open(_ location: PostgresLocation, loops: [any EventLoop], busyTimeout: Duration, logger: Logger)
        async throws -> PostgresWireInserts?
    {
        try await PostgresWireLoopConnections.open(
            location, loops: loops, busyTimeout: busyTimeout, statements: statements, applicationName: applicationName,
            purpose: "record inserts", logger: logger
        ).map(PostgresWireInserts.init)
    }

    /// The connection of the current event loop, or any when the caller runs on none of them.
    var connection: PostgresWireConnection { lean.connection }

    /// Lean insert connections open now.
    var openConnections: Int { lean.openConnections }

    /// Inserts `record` (committed when this returns); `nil` when its id is taken.
    func insert(_ record: PostgresStorage.InsertRecord) async throws -> StoredRecord? {
        let parameters: [PostgresWireValue] = [
            .text(record.type), .text(record.id), PostgresWireValue(record.owner), .text(record.body), .integer(record.now),
            .text(record.isPrivate ? "true" : "false"),
        ]
        let rows = try await lean.translatingErrors { try await connection.query(0, parameters) }
        return try rows.first.map(PostgresWireReads.record(from:))
    }

    /// Closes every connection (each ends its session first) and waits until they are closed.
    func close() async {
        await lean.close()
    }
}
