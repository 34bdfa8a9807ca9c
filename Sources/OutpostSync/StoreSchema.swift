import Foundation
import GRDB

/// The store's tables, created by GRDB migrations.
///
/// - `records`: one row per local record: its fields (JSON), the server version they are based on
///   (`NULL` when unknown), the server's fields as last seen (`base`, for merges and for checking an
///   unknown version), and its state (`confirmed`, `pending`, `failed` with `error`).
/// - `pending`: the outbox, in order (`seq`): each local create or patch with its body, the
///   Idempotency-Key of a create, and `failed` when the server refused it. A local write and its
///   entry commit in one transaction.
/// - `positions`: per type, the change feed position the local copy has caught up to.
enum StoreSchema {
    /// How long a write waits for another connection's write to end (another `SyncedStore` on the
    /// same file, in this process, in the app or in one of its extensions) before it fails with
    /// `SQLITE_BUSY`.
    static let busyTimeout: TimeInterval = 10

    /// The configuration of the store's `DatabasePool`:
    ///
    /// - a busy timeout (`busyTimeout`): a write waits for one in another process instead of
    ///   failing with `SQLITE_BUSY`. GRDB begins every write transaction of a pool `IMMEDIATE`, so
    ///   two writers wait for each other at `BEGIN` and never deadlock halfway;
    /// - `observesSuspensionNotifications`: GRDB's `Database.suspendNotification` stops the pool from
    ///   taking locks (iOS terminates a suspended app that holds a lock on a file in an App Group
    ///   container, `0xdead10cc`), and `Database.resumeNotification` lets it take them again
    ///   (`SyncedStore.suspend()`, `SyncedStore.resume()`);
    /// - foreign keys, and statement journals in memory.
    static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.label = "OutpostSync"
        configuration.busyMode = .timeout(busyTimeout)
        configuration.observesSuspensionNotifications = true
        configuration.prepareDatabase { db in
            // Statement journals (each upsert inside a page's transaction keeps one) in memory,
            // not in temporary files: a pull writes thousands of rows a transaction.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        return configuration
    }

    /// Opens the store's database in WAL mode: reads run beside a write (a query or an
    /// observation never waits for a pull's transaction), one write at a time.
    static func open(_ url: URL) throws -> DatabasePool {
        let pool = try DatabasePool(path: url.path, configuration: configuration())
        try migrator.migrate(pool)
        return pool
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE records (
                        type TEXT NOT NULL,
                        id TEXT NOT NULL,
                        fields TEXT NOT NULL,
                        version INTEGER,
                        base TEXT,
                        state TEXT NOT NULL,
                        error TEXT,
                        PRIMARY KEY (type, id)
                    );
                    CREATE TABLE pending (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        type TEXT NOT NULL,
                        record_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        body TEXT NOT NULL,
                        idempotency_key TEXT,
                        failed TEXT
                    );
                    CREATE INDEX pending_record ON pending (type, record_id);
                    CREATE TABLE positions (
                        type TEXT PRIMARY KEY,
                        position TEXT NOT NULL
                    );
                    """)
        }
        return migrator
    }
}
