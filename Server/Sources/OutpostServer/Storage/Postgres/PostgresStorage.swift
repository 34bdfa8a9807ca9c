import Foundation
public import Logging
import NIOCore
import NIOPosix
@_spi(OutpostInternal) import OutpostSupport
package import PostgresNIO

/// ``Storage`` in a PostgreSQL database, shared by any number of server instances.
///
/// Opened by postgres-nio's connection pool. Every statement binds its values. A change of several
/// statements runs as a transaction on one pooled connection, leased for its duration
/// (`withTransaction(_:)`); row locks (`SELECT … FOR UPDATE`), unique constraints and
/// `INSERT … ON CONFLICT` keep instances from racing each other. Migrations are numbered and run
/// under an advisory lock, so instances that start together apply each step once.
public final class PostgresStorage: Storage, InstrumentedStorage {
    /// The connection pools: one per event loop of NIO's shared group (the server's), whose
    /// connections all live on that loop, or a single pool when the connections allowed are fewer
    /// than two per loop.
    let clients: [PostgresClient]
    /// The pool of each event loop, by the loop's identity.
    let clientsByLoop: [ObjectIdentifier: PostgresClient]
    let runner: Task<Void, Never>
    /// The pool in the count of open resources, taken back by ``close()``.
    let counted = OpenResources.opened()
    let logger: Logger
    /// The database, without its password.
    public let location: PostgresLocation
    /// The server's timers of storage operations, once it installed them.
    let instrumentsSlot = StorageInstrumentsSlot()

    /// Connects to the database at `location` (which must exist) and checks that it answers.
    ///
    /// - Parameters:
    ///   - location: The database; its password is never logged.
    ///   - busyTimeout: How long a statement waits for a row or table lock before the request fails
    ///     with 503 `storage_busy` (PostgreSQL's `lock_timeout`).
    ///   - maxConnections: The size of the connection pool.
    ///   - logger: Receives the storage's own messages.
    /// - Throws: ``ServerError`` `database_open_failed` when the database cannot be reached.
    public static func open(
        _ location: PostgresLocation, busyTimeout: Duration = .seconds(5), maxConnections: Int = 20, logger: Logger
    ) async throws -> PostgresStorage {
        let tls: PostgresClient.Configuration.TLS
        switch location.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: tls)
        let loops = EventLoopTaskExecutor.shared.map(\.eventLoop)
        let pools = Self.poolSizes(
            maxConnections: maxConnections, loops: loops.count,
            processors: ProcessInfo.processInfo.activeProcessorCount)
        configuration.options.maximumConnections = pools.maximum
        // Each time a connection goes back to the pool, postgres-nio schedules a keep-alive timer
        // and, for a connection above the pool's minimum, an idle timer (a child task sleeping on
        // a dispatch timer each), and cancels them when the connection is leased again: per query.
        // Without keep-alive pings, and with the connections a request load on this machine uses
        // kept open, a query starts and ends no timer; a connection the network broke meanwhile
        // fails its next query (503 `storage_unavailable`, retried) and the pool replaces it.
        configuration.options.keepAliveBehavior = nil
        configuration.options.minimumConnections = pools.kept
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.additionalStartupParameters = [
            ("lock_timeout", "\(max(1, IdempotencyRow.milliseconds(busyTimeout)))"),
            ("application_name", "outpost"),
        ]
        // The pool's own messages: errors only (it warns about leases asked for while its run task is
        // still starting, which then proceed).
        var background = logger
        background.logLevel = max(logger.logLevel, .error)
        // A request handled on an event loop (the server handles each connection on its own loop)
        // queries through that loop's pool: the query is written, answered and resumed on one
        // thread, with no hand-off to another.
        let clients =
            pools.perLoop
            ? loops.map { PostgresClient(configuration: configuration, eventLoopGroup: $0, backgroundLogger: background) }
            : [PostgresClient(configuration: configuration, backgroundLogger: background)]
        let runner = Task {
            await withDiscardingTaskGroup { group in
                for client in clients { group.addTask { await client.run() } }
            }
        }
        let byLoop = pools.perLoop ? Dictionary(uniqueKeysWithValues: zip(loops.map { ObjectIdentifier($0) }, clients)) : [:]
        let storage = PostgresStorage(
            clients: clients, byLoop: byLoop, runner: runner, logger: logger, location: location)
        do {
            try await storage.execute("SELECT 1")
        } catch {
            try? await storage.close()
            throw ServerError(
                .internalServerError, code: "database_open_failed",
                message:
                    "Could not connect to the database \(location): \(Self.reason(error)). Check the URL and that PostgreSQL runs"
            )
        }
        return storage
    }

    /// How many pooled connections stay open while idle: two per processor, at least four.
    static func keptConnections(processors: Int) -> Int { max(4, 2 * processors) }

    /// The size of each pool: one pool per event loop when `maxConnections` allows two connections
    /// per loop or more (each pool gets its share, and keeps at least four of them, or its
    /// ``keptConnections(processors:)`` share, open while idle), otherwise one pool of
    /// `maxConnections` keeping ``keptConnections(processors:)`` open.
    static func poolSizes(maxConnections: Int, loops: Int, processors: Int) -> (perLoop: Bool, maximum: Int, kept: Int) {
        let total = max(1, maxConnections)
        guard loops > 0, total >= 2 * loops else { return (false, total, min(total, keptConnections(processors: processors))) }
        let share = total / loops
        return (true, share, min(share, max(4, keptConnections(processors: processors) / loops)))
    }

    /// The pool for a query from the current thread: its event loop's, when the caller runs on a
    /// loop with a pool; otherwise any.
    var client: PostgresClient {
        if clients.count > 1 {
            if let loop = MultiThreadedEventLoopGroup.currentEventLoop, let client = clientsByLoop[ObjectIdentifier(loop)] {
                return client
            }
            return clients.randomElement() ?? clients[0]
        }
        return clients[0]
    }

    init(
        clients: [PostgresClient], byLoop: [ObjectIdentifier: PostgresClient], runner: Task<Void, Never>, logger: Logger,
        location: PostgresLocation
    ) {
        self.clients = clients
        self.clientsByLoop = byLoop
        self.runner = runner
        self.logger = logger
        self.location = location
    }

    /// The numbered schema steps. Append only; never edit a step that has shipped. Step 1 is the
    /// schema SQLite reached with its migrations 1–7; step 2 is the change feed (SQLite's 8); step 3
    /// keeps the feed's order on the reading side instead of serializing writers; step 4 holds the
    /// access rules and users' roles (SQLite's 9); step 5 the invite codes for sign-up (SQLite's 10); step 6
    /// the leases of after hooks and scheduled jobs (SQLite's 11); step 7 the declared indexes of
    /// record types (SQLite's 12); step 8 keeps a deleted record's last fields in its change (SQLite's 13);
    /// step 9 holds `/files` (SQLite keeps files in a folder); step 10 the quotas (SQLite's 14); step 11
    /// the sealed replies of refresh tokens rotated within the reuse grace window (SQLite's 15); step 12
    /// the upstream OpenID Connect providers and the e-mail of a linked identity (SQLite's 16); step 13
    /// the ids of deleted users and the check that refuses their record writes (SQLite's 17); step 14
    /// the pending web sign-ins through upstream providers and their sealed refresh tokens (SQLite's 18);
    /// step 15 the audit log (SQLite's 19); step 16 users' e-mail addresses and the single-use tokens
    /// mailed to them (SQLite's 20).
    static let migrations: [(version: Int, statements: [String])] = [
        (1, schema), (2, changesSchema), (3, changesWatermarkSchema), (4, rulesSchema), (5, invitesSchema),
        (6, leasesSchema), (7, indexesSchema), (8, deletedBodySchema), (9, filesSchema), (10, quotasSchema),
        (11, successorsSchema), (12, upstreamSchema), (13, deletedUsersSchema),
        (14, upstreamSessionsSchema), (15, auditSchema),
        // Users' e-mail addresses; the single-use tokens of password reset and e-mail verification.
        (16, mailSchema),
        // When an administrator disabled a user.
        (17, disabledUsersSchema),
    ]

    /// Serialises migrations of every instance on the database (`pg_advisory_xact_lock`).
    static let migrationLock: Int64 = 0x6F75_7470_6F73_74  // "outpost"

    public func migrate() async throws {
        let applied: [Int]
        do {
            applied = try await withTransaction { connection in
                // Instances starting together wait for each other's migrations, however long they take.
                try await Self.execute("SET LOCAL lock_timeout = '10min'", on: connection)
                try await Self.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", on: connection)
                try await Self.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                    on: connection)
                let current =
                    try await Self.rows(
                        "SELECT COALESCE(MAX(version), 0)::BIGINT AS version FROM schema_migrations", on: connection
                    ).first?["version"].decode(Int64.self) ?? 0
                var applied: [Int] = []
                for migration in Self.migrations where migration.version > current {
                    for statement in migration.statements {
                        try await Self.execute(PostgresQuery(unsafeSQL: statement), on: connection)
                    }
                    try await Self.execute(
                        "INSERT INTO schema_migrations (version, applied_at) VALUES (\(Int64(migration.version)), \(Int64(Date().timeIntervalSince1970)))",
                        on: connection)
                    applied.append(migration.version)
                }
                return applied
            }
        } catch {
            throw ServerError(
                .internalServerError, code: "migration_failed",
                message: "Migrating the database \(location) failed: \(Self.reason(error)). Nothing was changed")
        }
        for version in applied {
            logger.info("database migrated", metadata: ["version": "\(version)", "database": "\(location)"])
        }
    }

    public func schemaVersion() async throws -> Int {
        let exists =
            try await rows("SELECT to_regclass('schema_migrations') IS NOT NULL AS present").first?["present"]
            .decode(Bool.self) ?? false
        guard exists else { return 0 }
        let version = try await rows("SELECT COALESCE(MAX(version), 0)::BIGINT AS version FROM schema_migrations").first?[
            "version"
        ].decode(Int64.self)
        return Int(version ?? 0)
    }

    public func checkHealth() async throws {
        try await execute("SELECT 1")
    }

    /// ``schemaVersion()``, which answers only when the database does.
    public func health() async throws -> Int {
        try await schemaVersion()
    }

    public func close() async throws {
        runner.cancel()
        await runner.value
        counted.close()
    }

    // MARK: Running statements

    /// Runs `body` as one transaction on one pooled connection, which no other request uses
    /// meanwhile: `BEGIN`, then `COMMIT` when `body` returns or `ROLLBACK` when it throws (its error
    /// is rethrown as it is).
    package func withTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await translatingErrors(.transaction) {
            try await client.withConnection { connection in
                _ = try await connection.query("BEGIN", logger: logger)
                do {
                    let value = try await body(connection)
                    _ = try await connection.query("COMMIT", logger: logger)
                    return value
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    /// The rows of one statement on any pooled connection.
    package func rows(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        try await translatingErrors {
            try await client.query(query, logger: logger).collect().map { $0.makeRandomAccess() }
        }
    }

    package func execute(_ query: PostgresQuery) async throws {
        _ = try await rows(query)
    }

    /// The rows of one statement on `connection` (inside a transaction).
    package static func rows(_ query: PostgresQuery, on connection: PostgresConnection) async throws
        -> [PostgresRandomAccessRow]
    {
        try await connection.query(query, logger: connection.logger).collect().map { $0.makeRandomAccess() }
    }

    package static func execute(_ query: PostgresQuery, on connection: PostgresConnection) async throws {
        _ = try await rows(query, on: connection)
    }

    /// Lock waits past the busy timeout, deadlocks and lost connections become 503s with
    /// `Retry-After`; other database errors pass through (and are answered 500). Timed as
    /// `operation` once the server installed its instruments.
    func translatingErrors<T>(_ operation: StorageOperation = .statement, _ body: () async throws -> T) async throws -> T {
        do {
            guard let instruments = instrumentsSlot.instruments else { return try await body() }
            return try await instruments.measure(.postgres, operation, body)
        } catch let error as PSQLError {
            if error.code == .server {
                if let state = error.serverInfo?[.sqlState], Self.busyStates.contains(state) { throw Self.busy }
                throw error
            }
            logger.warning("database unreachable", metadata: ["database": "\(location)", "error": "\(Self.reason(error))"])
            throw Self.unavailable
        }
    }

    /// SQLSTATEs answered 503 `storage_busy`: a lock wait past the busy timeout, a deadlock, a
    /// serialization failure, a statement cancelled.
    static let busyStates: Set<String> = ["55P03", "40P01", "40001", "57014"]

    static var busy: ServerError {
        ServerError(
            .serviceUnavailable, code: "storage_busy",
            message: "The database is busy (a lock was held too long); retry after 1 s", headers: [.retryAfter: "1"])
    }

    static var unavailable: ServerError {
        ServerError(
            .serviceUnavailable, code: "storage_unavailable",
            message: "The database cannot be reached; retry after 1 s", headers: [.retryAfter: "1"])
    }

    /// Whether `error` is PostgreSQL's unique violation (on the constraint named `constraint`, if given).
    static func isUniqueViolation(_ error: any Error, constraint: String? = nil) -> Bool {
        guard let error = error as? PSQLError, error.code == .server, error.serverInfo?[.sqlState] == "23505" else {
            return false
        }
        return constraint.map { error.serverInfo?[.constraintName] == $0 } ?? true
    }

    /// A short, secret-free account of a database error.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
        }
        return "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
    }
}

/// Builds a statement with a variable number of `$n` placeholders (filters, optional conditions).
struct PostgresStatement {
    var sql: String
    var binds = PostgresBindings()

    init(_ sql: String) {
        self.sql = sql
    }

    /// Binds `value` and returns its placeholder.
    mutating func bind(_ value: some PostgresEncodable & Sendable) -> String {
        try? binds.append(value)
        return "$\(binds.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: binds) }
}

extension PostgresRandomAccessRow {
    func string(_ column: String) throws -> String { try self[column].decode(String.self) }
    func optionalString(_ column: String) throws -> String? { try self[column].decode(String?.self) }
    func int64(_ column: String) throws -> Int64 { try self[column].decode(Int64.self) }
    func optionalInt64(_ column: String) throws -> Int64? { try self[column].decode(Int64?.self) }
}
