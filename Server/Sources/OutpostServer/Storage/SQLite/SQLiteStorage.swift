import Foundation
public import Logging
import NIOPosix
@_spi(OutpostInternal) import OutpostSupport
import SQLiteNIO
import Synchronization

/// ``Storage`` in one SQLite file (WAL mode), on connections that keep their prepared statements
/// (`SQLiteHandle`).
///
/// Every statement binds its values (no SQL is built from input). Migrations are numbered and
/// recorded in `schema_migrations`; each runs once, in order.
public final class SQLiteStorage: Storage, InstrumentedStorage {
    let connection: BusyBoundedConnection
    /// A second connection for multi-statement transactions (`withTransaction(_:)`), so
    /// statements of concurrent requests on `connection` never land inside one; used by one task at a time.
    let writer: BusyBoundedConnection
    let writerLock = KeyedLock()
    /// Read-only connections for the hot reads (a record, a list page, a token, a user), taken in
    /// turn: in WAL mode they read the last committed state while `connection` and `writer` write,
    /// so reads do not queue behind writes.
    let readers: [BusyBoundedConnection]
    let nextReader = Atomic<Int>(0)
    let logger: Logger
    public let path: String
    /// The server's timers of storage operations, once it installed them.
    let instrumentsSlot: StorageInstrumentsSlot

    /// Opens (creating if needed) the database at `path`.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - busyTimeout: How long a statement waits for another process's lock before it fails
    ///     with 503 `storage_busy`.
    ///   - logger: Receives the storage's own log messages.
    public static func open(path: String, busyTimeout: Duration = .seconds(5), logger: Logger) async throws -> SQLiteStorage {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            throw ServerError(
                .internalServerError, code: "database_directory_missing",
                message: "The folder '\(directory)' for the database does not exist; create it or choose another --database path")
        }
        let connection: SQLiteHandle
        do {
            connection = try await SQLiteHandle.open(path: path)
        } catch {
            throw ServerError(
                .internalServerError, code: "database_open_failed",
                message: "Could not open the database at '\(path)': \(error). Check the path and its permissions")
        }
        // No busy handler: a statement meeting another connection's lock fails at once, and
        // BusyBoundedConnection waits between attempts without holding a thread or a lock.
        let bounded = BusyBoundedConnection(connection: connection, busyTimeout: busyTimeout)
        do {
            _ = try await bounded.query("PRAGMA journal_mode=WAL")
            _ = try await bounded.query("PRAGMA synchronous=NORMAL")
            _ = try await bounded.query("PRAGMA foreign_keys=ON")
            _ = try await bounded.query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)")
        } catch {
            try? await connection.close()
            throw error
        }
        // Opened once the file is in WAL mode.
        let writer: BusyBoundedConnection
        var second: SQLiteHandle?
        do {
            let opened = try await SQLiteHandle.open(path: path)
            second = opened
            writer = BusyBoundedConnection(connection: opened, busyTimeout: busyTimeout)
            _ = try await writer.query("PRAGMA synchronous=NORMAL")
            _ = try await writer.query("PRAGMA foreign_keys=ON")
        } catch {
            try? await second?.close()
            try? await connection.close()
            throw ServerError(
                .internalServerError, code: "database_open_failed",
                message: "Could not open the database at '\(path)': \(error). Check the path and its permissions")
        }
        var readers: [BusyBoundedConnection] = []
        do {
            for _ in 0..<Self.readerCount {
                let reader = try await SQLiteHandle.open(path: path)
                readers.append(BusyBoundedConnection(connection: reader, busyTimeout: busyTimeout))
                _ = try await reader.query("PRAGMA query_only = 1", [])
            }
        } catch {
            for reader in readers { try? await reader.close() }
            try? await writer.close()
            try? await connection.close()
            throw ServerError(
                .internalServerError, code: "database_open_failed",
                message: "Could not open the database at '\(path)': \(error). Check the path and its permissions")
        }
        let storage = SQLiteStorage(connection: bounded, writer: writer, readers: readers, logger: logger, path: path)
        return storage
    }

    /// How many read-only connections a storage opens.
    static let readerCount = 2

    /// Runs one statement without parameters on the main connection, as `PostgresStorage`'s
    /// `execute(_:)` does there: for this package's tools that set a database up (the tests' and the
    /// benchmark's), never with outside input.
    package func execute(unsafeSQL sql: String) async throws {
        _ = try await connection.query(sql)
    }

    /// The next read-only connection (round robin).
    var reader: BusyBoundedConnection {
        readers[nextReader.add(1, ordering: .relaxed).oldValue % readers.count]
    }

    /// Runs a short read (one row found by its key: a token, a record) on the caller's thread, on
    /// the first read-only connection that no other statement is using; when all are in use, on
    /// the next one's thread as ``reader`` does.
    ///
    /// A trip to a connection's thread and back costs two thread switches (a wake-up of the
    /// connection's thread, then of a Swift concurrency thread to resume the caller), more than
    /// such a read itself. Only key lookups come here: they touch a few pages, so the caller's
    /// thread is held for microseconds. Reads that may scan (page-number lists, counts) keep
    /// going through ``reader``; keyset list pages run in place within a bound on the rows they
    /// walk (``listRecordText(_:from:backwards:)``). A connection that meets another process's lock (`SQLITE_BUSY`) goes
    /// the usual way, which waits up to the busy timeout without holding a thread.
    func pointRead<T: Sendable>(
        _ sql: String, _ binds: [SQLiteData], _ body: @escaping @Sendable (inout RowReader) throws -> T
    ) async throws -> T {
        let first = nextReader.add(1, ordering: .relaxed).oldValue
        if let value = try readInPlace(sql, binds, startingAt: first, body) { return value }
        return try await readers[first % readers.count].read(sql, binds, body)
    }

    /// Runs a bounded read on the caller's thread on the first read-only connection (from
    /// `first`, in turn) that no other statement is using: `nil` when all are in use, or when the
    /// statement met another process's lock (`SQLITE_BUSY`, which fails at once: no busy handler).
    /// The caller then takes the way through a connection's thread, which waits for locks without
    /// holding a thread. Only for reads whose work is bounded (``pointRead(_:_:_:)``, the bounded
    /// list page of ``listRecordText(_:from:backwards:)``).
    func readInPlace<T: Sendable>(
        _ sql: String, _ binds: [SQLiteData], startingAt first: Int, _ body: (inout RowReader) throws -> T
    )
        throws -> T?
    {
        guard let instruments = instrumentsSlot.instruments else {
            return try readInPlaceUnmeasured(sql, binds, startingAt: first, body)
        }
        return try instruments.measureInPlace(.sqlite, .readInPlace) {
            try readInPlaceUnmeasured(sql, binds, startingAt: first, body)
        }
    }

    private func readInPlaceUnmeasured<T: Sendable>(
        _ sql: String, _ binds: [SQLiteData], startingAt first: Int, _ body: (inout RowReader) throws -> T
    ) throws -> T? {
        do {
            for offset in 0..<readers.count {
                if let value = try readers[(first + offset) % readers.count].connection.readIfFree(sql, binds, body) {
                    return value
                }
            }
        } catch let error as SQLiteFailure where error.isBusy {}
        return nil
    }

    init(
        connection: BusyBoundedConnection, writer: BusyBoundedConnection, readers: [BusyBoundedConnection], logger: Logger,
        path: String
    ) {
        let slot = StorageInstrumentsSlot()
        self.instrumentsSlot = slot
        self.connection = connection.instrumented(slot, as: .statement)
        // Statements inside a transaction are timed as the whole transaction.
        self.writer = writer.instrumented(slot, as: nil)
        self.readers = readers.map { $0.instrumented(slot, as: .read) }
        self.logger = logger
        self.path = path
    }

    /// The numbered schema steps. Append only; never edit a step that has shipped.
    ///
    /// Records: `seq` is a global, ever-growing number that breaks ties in keyset pagination, so
    /// `(type, created_at, seq)` and `(type, updated_at, seq)` order every list completely and
    /// their indexes serve any page in O(log n) however deep. `owner` is set once sign-in lands.
    static let migrations: [(version: Int, statements: [String])] = [
        (
            1,
            [
                """
                CREATE TABLE records (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    type TEXT NOT NULL,
                    id TEXT NOT NULL,
                    owner TEXT,
                    body TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                )
                """,
                "CREATE UNIQUE INDEX records_by_id ON records (type, id)",
                "CREATE INDEX records_by_created ON records (type, created_at, seq)",
                "CREATE INDEX records_by_updated ON records (type, updated_at, seq)",
                "CREATE TABLE settings (key TEXT PRIMARY KEY, value BLOB NOT NULL)",
            ]
        ),
        (
            2,
            [
                """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    username TEXT NOT NULL UNIQUE COLLATE NOCASE,
                    password_hash TEXT,
                    entitlements TEXT NOT NULL DEFAULT '[]',
                    created_at INTEGER NOT NULL
                )
                """,
                "CREATE TABLE user_identities (provider TEXT NOT NULL, subject TEXT NOT NULL, user_id TEXT NOT NULL, PRIMARY KEY (provider, subject))",
                """
                CREATE TABLE oauth_clients (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    secret_hash TEXT,
                    redirect_uris TEXT NOT NULL,
                    grants TEXT NOT NULL,
                    scopes TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                )
                """,
                """
                CREATE TABLE tokens (
                    hash TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    user_id TEXT,
                    client_id TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    family TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    state TEXT NOT NULL DEFAULT 'active',
                    created_at INTEGER NOT NULL
                )
                """,
                "CREATE INDEX tokens_by_family ON tokens (family)",
                """
                CREATE TABLE auth_codes (
                    hash TEXT PRIMARY KEY,
                    client_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    redirect_uri TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    code_challenge TEXT,
                    expires_at INTEGER NOT NULL,
                    used INTEGER NOT NULL DEFAULT 0
                )
                """,
                """
                CREATE TABLE device_codes (
                    hash TEXT PRIMARY KEY,
                    user_code TEXT NOT NULL UNIQUE,
                    client_id TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    interval_seconds INTEGER NOT NULL,
                    last_poll INTEGER NOT NULL DEFAULT 0,
                    status TEXT NOT NULL DEFAULT 'pending',
                    user_id TEXT
                )
                """,
                "CREATE TABLE browser_sessions (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at INTEGER NOT NULL)",
            ]
        ),
        (
            3,
            [
                """
                INSERT OR IGNORE INTO oauth_clients (id, name, secret_hash, redirect_uris, grants, scopes, created_at)
                VALUES ('outpost-cli', 'Outpost CLI', NULL, '["http://127.0.0.1/callback"]',
                        '["authorization_code","device_code","password","refresh_token"]', '["records","profile"]', 0)
                """
            ]
        ),
        (
            4,
            [
                // A replayed code revokes its tokens (`family`); failed guesses are counted in storage; the
                // built-in CLI client loses the password grant (RFC 9700 §2.4: it is opt-in per client).
                "ALTER TABLE auth_codes ADD COLUMN family TEXT",
                // Each row expires on its own: limiters with different windows share the table.
                "CREATE TABLE auth_failures (key TEXT NOT NULL, at INTEGER NOT NULL, expires_at INTEGER NOT NULL)",
                "CREATE INDEX auth_failures_by_key ON auth_failures (key, at)",
                "CREATE INDEX auth_failures_by_expiry ON auth_failures (expires_at)",
                """
                UPDATE oauth_clients
                SET grants = (SELECT json_group_array(value) FROM json_each(oauth_clients.grants) WHERE value != 'password')
                WHERE id = 'outpost-cli'
                """,
            ]
        ),
        (5, openIDMigration),
        // Idempotency-Key on POST.
        (6, idempotencyMigration),
        // Private records, readable by their owner only.
        (7, ["ALTER TABLE records ADD COLUMN private INTEGER NOT NULL DEFAULT 0"]),
        // The change feed (record_changes, written by triggers on records).
        (8, changesMigration),
        // Access rules per record type and operation; users' roles.
        (9, rulesMigration),
        // One-time invite codes for sign-up (hashes and expiry).
        (10, invitesMigration),
        // Leases of after hooks and scheduled jobs, shared by the processes on one file.
        (11, leasesMigration),
        // Declared indexes of record types (the indexes themselves are built when declared).
        (12, indexesMigration),
        // A deletion's change row keeps the record's last fields.
        (13, deletedBodyMigration),
        // Quotas per user: defaults, a user's own bounds, what each owner's records take.
        (14, quotasMigration),
        // The sealed replies of refresh tokens rotated within the reuse grace window.
        (
            15,
            [
                """
                CREATE TABLE token_successors (
                    hash TEXT PRIMARY KEY,
                    sealed TEXT NOT NULL,
                    expires_at INTEGER NOT NULL
                )
                """,
                "CREATE INDEX token_successors_by_expiry ON token_successors (expires_at)",
            ]
        ),
        // Upstream OpenID Connect providers; the e-mail of a linked identity.
        (16, upstreamMigration),
        // Deleted users' ids, and the check that refuses a record write owned by one.
        (17, deletedUsersMigration),
        // Pending web sign-ins through upstream providers; the sealed refresh tokens they issued.
        (18, upstreamSessionsMigration),
        // The audit log (append-only).
        (19, auditMigration),
        // Users' e-mail addresses; the single-use tokens of password reset and e-mail verification.
        (20, mailMigration),
        // When an administrator disabled a user.
        (21, disabledUsersMigration),
    ]

    /// Runs `body` as one transaction on the writer connection, which no other request uses
    /// meanwhile: `BEGIN IMMEDIATE` takes the database's write lock (waiting for other processes up
    /// to the busy timeout), `COMMIT` when `body` returns, `ROLLBACK` when it throws.
    func withTransaction<T: Sendable>(_ body: @Sendable (BusyBoundedConnection) async throws -> T) async throws -> T {
        guard let instruments = instrumentsSlot.instruments else { return try await transaction(body) }
        return try await instruments.measure(.sqlite, .transaction) { try await transaction(body) }
    }

    private func transaction<T: Sendable>(_ body: @Sendable (BusyBoundedConnection) async throws -> T) async throws -> T {
        try await writerLock.withLock("writer") {
            _ = try await writer.query("BEGIN IMMEDIATE")
            do {
                let value = try await body(writer)
                _ = try await writer.query("COMMIT")
                return value
            } catch {
                _ = try? await writer.query("ROLLBACK")
                throw error
            }
        }
    }

    /// Runs one migration transaction; while another process migrates the same file (servers
    /// starting together) it waits for it, up to twelve busy timeouts, instead of failing the start.
    private func migrationStep(_ body: @Sendable (BusyBoundedConnection) async throws -> Bool) async throws -> Bool {
        var attempts = 0
        while true {
            do {
                return try await withTransaction(body)
            } catch let error as ServerError where error.code == "storage_busy" && attempts < 11 {
                attempts += 1
            }
        }
    }

    /// Applies the migrations not applied yet. Each runs in its own transaction and the version is
    /// read inside it, so servers starting together on one file apply each step once.
    public func migrate() async throws {
        for migration in Self.migrations {
            do {
                let applied = try await migrationStep { connection in
                    let rows = try await connection.query(
                        "SELECT 1 AS applied FROM schema_migrations WHERE version = ?", [.integer(migration.version)])
                    guard rows.isEmpty else { return false }
                    for statement in migration.statements {
                        _ = try await connection.query(statement)
                    }
                    _ = try await connection.query(
                        "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                        [.integer(migration.version), .integer(Int(Date().timeIntervalSince1970))])
                    return true
                }
                if applied {
                    logger.info("database migrated", metadata: ["version": "\(migration.version)", "path": "\(path)"])
                }
            } catch {
                let current = (try? await schemaVersion()) ?? 0
                throw ServerError(
                    .internalServerError, code: "migration_failed",
                    message:
                        "Migration \(migration.version) of '\(path)' failed: \(error). The database was left at version \(current)"
                )
            }
        }
    }

    public func schemaVersion() async throws -> Int {
        let rows = try await connection.query("SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations")
        return rows.first?.column("version")?.integer ?? 0
    }

    public func checkHealth() async throws {
        _ = try await connection.query("SELECT 1")
    }

    /// The schema version's query alone: it answers only when the database does.
    public func health() async throws -> Int {
        try await schemaVersion()
    }

    public func close() async throws {
        for reader in readers { try? await reader.close() }
        try? await writer.close()
        try await connection.close()
    }
}

/// One SQLite connection whose statements, when another connection holds the lock they need, are
/// retried with growing pauses (1 ms up to 50 ms) until `busyTimeout`, then fail with 503
/// `storage_busy` and `Retry-After`. Waiting holds no thread and no lock, so other statements (reads,
/// `/health`) run meanwhile.
struct BusyBoundedConnection: Sendable {
    let connection: SQLiteHandle
    let busyTimeout: Duration
    /// The storage's instruments, and what this connection's statements count as (`nil`: not
    /// timed one by one; lock retries are counted all the same).
    var instruments: StorageInstrumentsSlot? = nil
    var operation: StorageOperation? = nil

    /// This connection, timed into `slot` as `operation`.
    func instrumented(_ slot: StorageInstrumentsSlot, as operation: StorageOperation?) -> BusyBoundedConnection {
        BusyBoundedConnection(connection: connection, busyTimeout: busyTimeout, instruments: slot, operation: operation)
    }

    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [StatementRow] {
        try await retryingBusy { try await connection.query(sql, binds) }
    }

    /// ``SQLiteHandle/read(_:_:_:)`` with the same waiting for locks as ``query(_:_:)``.
    func read<T: Sendable>(_ sql: String, _ binds: [SQLiteData], _ body: @escaping @Sendable (inout RowReader) throws -> T)
        async throws -> T
    {
        try await retryingBusy { try await connection.read(sql, binds, body) }
    }

    private func retryingBusy<T>(_ attempt: () async throws -> T) async throws -> T {
        guard let measured = instruments?.instruments else { return try await retryingBusy(attempt, counting: nil) }
        guard let operation else { return try await retryingBusy(attempt, counting: measured) }
        return try await measured.measure(.sqlite, operation) { try await retryingBusy(attempt, counting: measured) }
    }

    private func retryingBusy<T>(_ attempt: () async throws -> T, counting instruments: StorageInstruments?)
        async throws -> T
    {
        let clock = ContinuousClock()
        let deadline = clock.now + busyTimeout
        var pause = Duration.milliseconds(1)
        while true {
            do {
                return try await attempt()
            } catch let error as SQLiteFailure where error.isBusy {
                if clock.now + pause > deadline { throw Self.busy(busyTimeout) }
                instruments?.busyRetry(.sqlite)
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(50))
            }
        }
    }

    func close() async throws {
        try await connection.close()
    }

    static func busy(_ waited: Duration) -> ServerError {
        let seconds = max(1, Int(waited.inSeconds))
        return ServerError(
            .serviceUnavailable, code: "storage_busy",
            message: "The database is locked by another process and stayed locked for \(waited); retry after \(seconds) s",
            headers: [.retryAfter: "\(seconds)"])
    }
}
