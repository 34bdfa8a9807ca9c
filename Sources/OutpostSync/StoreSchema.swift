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
    /// Opens the store's database in WAL mode: reads run beside a write (a query or an
    /// observation never waits for a pull's transaction), one write at a time.
    static func open(_ url: URL) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.label = "OutpostSync"
        configuration.prepareDatabase { db in
            // Statement journals (each upsert inside a page's transaction keeps one) in memory,
            // not in temporary files: a pull writes thousands of rows a transaction.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        let pool = try DatabasePool(path: url.path, configuration: configuration)
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
