import Logging
import NIOCore
import NIOPosix

/// The reads every request makes (a record by id, a token by hash, a list page without filters)
/// on lean connections of the storage's own, one per event loop, instead of postgres-nio's pools.
///
/// postgres-nio stays for everything else (writes, transactions, migrations, filtered lists,
/// page-number lists, LISTEN). A
/// database that requires TLS, or offers it under `sslmode=prefer`, or asks for an authentication
/// method other than trust, password, md5 or SCRAM-SHA-256, keeps postgres-nio for these reads
/// too (``open(_:loops:busyTimeout:logger:)`` returns `nil` then).
///
/// The reads, like ``PostgresWireConnection/query(_:_:rowCapacity:sink:)`` under them and the
/// list route's keyset page over them, are `nonisolated(nonsending)`: they run on their caller's
/// executor (the request's event loop), so entering and leaving each does not make the runtime
/// look up the task's preferred executor under the task's status lock (6.1 % of a list page's
/// server CPU at c=32 went there, 4.3 % after).
final class PostgresWireReads: Sendable {
    let lean: PostgresWireLoopConnections

    /// The statements each connection prepares, by index: integers (`int8` and `bool` columns,
    /// keyset positions and limits) travel in binary.
    static let statements: [PostgresWireStatement] =
        [
            PostgresWireStatement(
                name: PostgresStorage.RecordByID.name, sql: PostgresStorage.RecordByID.sql, parameterTypes: [0, 0],
                binaryResults: recordResults),
            PostgresWireStatement(
                name: PostgresStorage.TokenByHash.name, sql: PostgresStorage.TokenByHash.sql, parameterTypes: [0],
                binaryResults: [false, false, false, false, false, true, false]),
        ]
        + PostgresStorage.keysetOrders.map {
            PostgresWireStatement(name: $0.name, sql: $0.sql, parameterTypes: keysetParameters, binaryResults: recordResults)
        }
        + PostgresStorage.keysetTextOrders.map {
            PostgresWireStatement(
                name: $0.name, sql: $0.sql, parameterTypes: keysetParameters,
                binaryResults: [true, false, false, true, true, true])
        }
        + [
            PostgresWireStatement(
                name: "outpost_schema_version", sql: "SELECT MAX(version) AS version FROM schema_migrations", parameterTypes: [],
                binaryResults: [false])
        ]
    /// Of ``PostgresStorage/columns``: seq, version, the times and the private flag in binary.
    static let recordResults = [true, false, false, false, false, true, true, true, true]
    /// A keyset page's type, viewer, start (time and seq) and limit.
    static let keysetParameters = [0, 0, PostgresWireStatement.int8, PostgresWireStatement.int8, PostgresWireStatement.int8]
    static let recordByID = 0
    static let tokenByHash = 1
    /// The first of the four keyset-page statements, in the order of ``PostgresStorage/keysetOrders``.
    static let keysetPages = 2
    /// The first of the four keyset statements of page text (``PostgresStorage/keysetTextOrders``).
    static let keysetTextPages = 6
    /// The schema version, the health probe's statement (the lean connections open after the
    /// migrations, so `schema_migrations` exists when they prepare it).
    static let schemaVersion = 10

    private init(_ lean: PostgresWireLoopConnections) {
        self.lean = lean
    }

    /// Opens one connection per loop of `loops`, or returns `nil` (and logs why at `info`) when
    /// the database is one the lean connections do not serve: postgres-nio's pools then read too.
    ///
    /// - Throws: the reason a connection failed when the database refuses it (a wrong password,
    ///   a missing database), as postgres-nio's own check would.
    static func open(_ location: PostgresLocation, loops: [any EventLoop], busyTimeout: Duration, logger: Logger)
        async throws -> PostgresWireReads?
    {
        guard location.tls != .require else {
            logger.info("record and token reads use postgres-nio: the database URL requires TLS")
            return nil
        }
        return try await PostgresWireLoopConnections.open(
            location, loops: loops, busyTimeout: busyTimeout, statements: statements, purpose: "record and token reads",
            logger: logger
        ).map(PostgresWireReads.init)
    }

    /// The connection of the current event loop, or any when the caller runs on none of them.
    var connection: PostgresWireConnection { lean.connection }

    /// Lean connections open now.
    var openConnections: Int { lean.openConnections }

    nonisolated(nonsending) func record(type: String, id: String) async throws -> StoredRecord? {
        let rows = try await translatingErrors {
            try await connection.query(Self.recordByID, [.text(type), .text(id)], rowCapacity: 1)
        }
        return try rows.first.map(Self.record(from:))
    }

    /// A keyset page without filters: order `order` (an index of ``PostgresStorage/keysetOrders``),
    /// from `start`, at most `limit` records, private records of others left out.
    func keysetPage(order: Int, type: String, viewer: String?, start: RecordPosition, limit: Int64) async throws
        -> [StoredRecord]
    {
        try await keysetRows(Self.keysetPages + order, type: type, viewer: viewer, start: start, limit: limit)
            .map(Self.record(from:))
    }

    /// The rows of that page for its text (``PostgresStorage/pageTextColumns``), each given to
    /// `sink` as it is read.
    nonisolated(nonsending) func keysetText(
        order: Int, type: String, viewer: String?, start: RecordPosition, limit: Int64, into sink: PostgresWirePageText
    ) async throws {
        _ = try await keysetRows(Self.keysetTextPages + order, type: type, viewer: viewer, start: start, limit: limit, sink: sink)
    }

    nonisolated(nonsending) private func keysetRows(
        _ statement: Int, type: String, viewer: String?, start: RecordPosition, limit: Int64,
        sink: (any PostgresWireRowSink)? = nil
    ) async throws -> [ByteBuffer] {
        try await translatingErrors {
            try await connection.query(
                statement, [.text(type), PostgresWireValue(viewer), .integer(start.time), .integer(start.seq), .integer(limit)],
                rowCapacity: Int(min(limit, 1024)), sink: sink)
        }
    }

    /// The schema version, which answers only when this loop's connection and the database do
    /// (`GET /health`): one round trip on the connection the reads use, instead of two statements
    /// on a postgres-nio pool's leased connection.
    nonisolated(nonsending) func schemaVersion() async throws -> Int {
        let rows = try await translatingErrors { try await connection.query(Self.schemaVersion, [], rowCapacity: 1) }
        guard let row = rows.first else {
            throw ServerError(.internalServerError, code: "corrupt_row", message: "The schema version query returned no row")
        }
        return try Self.decoding {
            try PostgresWireRow.reading(row, columns: 1) { row in
                guard let text = try row.optionalString() else { return 0 }  // no migration yet
                guard let version = Int(text) else { throw PostgresWireError.protocolViolation("schema version \(text)") }
                return version
            }
        }
    }

    nonisolated(nonsending) func token(hash: String) async throws -> StoredToken? {
        let rows = try await translatingErrors { try await connection.query(Self.tokenByHash, [.text(hash)], rowCapacity: 1) }
        guard let payload = rows.first else { return nil }
        return try Self.decoding {
            try PostgresWireRow.reading(payload, columns: 7) { row in
                let kind = try row.string()
                return StoredToken(
                    hash: hash, kind: StoredToken.Kind(rawValue: kind) ?? .access, userID: try row.optionalString(),
                    clientID: try row.string(), scope: try row.string(), family: try row.string(), expiresAt: try row.int64(),
                    state: try row.string())
            }
        }
    }

    /// A record from a row of ``PostgresStorage/columns`` in text form.
    static func record(from payload: ByteBuffer) throws -> StoredRecord {
        try decoding {
            try PostgresWireRow.reading(payload, columns: 9) { row in
                let seq = try row.int64()
                return StoredRecord(
                    type: try row.string(), id: try row.string(), owner: try row.optionalString(), body: try row.string(),
                    version: Int(try row.int64()), createdAt: try row.int64(), updatedAt: try row.int64(), seq: seq,
                    isPrivate: try row.bool())
            }
        }
    }

    static func decoding<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PostgresWireError {
            throw ServerError(.internalServerError, code: "corrupt_row", message: "A database row could not be read: \(error)")
        }
    }

    nonisolated(nonsending) func translatingErrors<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        try await lean.translatingErrors(body)
    }

    /// Closes every connection (each ends its session first) and waits until they are closed.
    func close() async {
        await lean.close()
    }
}
