import Foundation
import SQLiteNIO

extension SQLiteStorage: ChangeFeedStorage {
    /// `at` of a change: now, in milliseconds since 1970, computed by SQLite itself.
    private static let nowInSQL = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"

    /// Migration 8: the change feed. Triggers on `records` write one `record_changes` row
    /// per record write, inside the write's own transaction, whichever connection or process makes
    /// it; `position` (AUTOINCREMENT, never reused) orders them. `record_changes_pruned` keeps the
    /// highest position retention removed, so a resume from before it is refused instead of
    /// silently missing changes.
    static let changesMigration: [String] = [
        """
        CREATE TABLE record_changes (
            position INTEGER PRIMARY KEY AUTOINCREMENT,
            type TEXT NOT NULL,
            record_id TEXT NOT NULL,
            change TEXT NOT NULL,
            version INTEGER NOT NULL,
            owner TEXT,
            private INTEGER NOT NULL DEFAULT 0,
            body TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            at INTEGER NOT NULL
        )
        """,
        "CREATE INDEX record_changes_by_type ON record_changes (type, position)",
        "CREATE INDEX record_changes_by_time ON record_changes (at)",
        "CREATE TABLE record_changes_pruned (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL)",
        "INSERT INTO record_changes_pruned (id, through) VALUES (1, 0)",
        trigger("record_created", event: "INSERT", change: "created", row: "NEW", body: "NEW.body"),
        trigger("record_updated", event: "UPDATE", change: "updated", row: "NEW", body: "NEW.body"),
        trigger("record_deleted", event: "DELETE", change: "deleted", row: "OLD", body: "NULL"),
    ]

    /// Migration 13: a deletion's change row keeps the record's last fields (migration 8 wrote
    /// `NULL`), so the feed decides who may see a deletion by the record as it was. Deletions
    /// written before it have no fields (`{}`).
    static let deletedBodyMigration: [String] = [
        "DROP TRIGGER record_deleted",
        trigger("record_deleted", event: "DELETE", change: "deleted", row: "OLD", body: "OLD.body"),
    ]

    private static func trigger(_ name: String, event: String, change: String, row: String, body: String) -> String {
        """
        CREATE TRIGGER \(name) AFTER \(event) ON records BEGIN
            INSERT INTO record_changes (type, record_id, change, version, owner, private, body, created_at, updated_at, at)
            VALUES (\(row).type, \(row).id, '\(change)', \(row).version, \(row).owner, \(row).private, \(body),
                    \(row).created_at, \(row).updated_at, \(nowInSQL));
        END
        """
    }

    public func changes(type: String?, after position: Int64, limit: Int) async throws -> [RecordChange] {
        let columns = "position, type, record_id, change, version, owner, private, body, created_at, updated_at, at"
        let rows: [StatementRow]
        if let type {
            rows = try await connection.query(
                "SELECT \(columns) FROM record_changes WHERE type = ? AND position > ? ORDER BY position LIMIT ?",
                [.text(type), .integer(Int(position)), .integer(limit)])
        } else {
            rows = try await connection.query(
                "SELECT \(columns) FROM record_changes WHERE position > ? ORDER BY position LIMIT ?",
                [.integer(Int(position)), .integer(limit)])
        }
        return try rows.map(Self.change(from:))
    }

    public func changeBounds() async throws -> ChangeBounds {
        let rows = try await connection.query(
            """
            SELECT (SELECT through FROM record_changes_pruned WHERE id = 1) AS pruned,
                   (SELECT COALESCE(MAX(position), 0) FROM record_changes) AS latest
            """)
        let pruned = rows.first?.column("pruned")?.integer ?? 0
        // AUTOINCREMENT never hands out a position again, even once its row is pruned.
        let sequence = try await connection.query("SELECT seq FROM sqlite_sequence WHERE name = 'record_changes'")
        let latest = max(rows.first?.column("latest")?.integer ?? 0, sequence.first?.column("seq")?.integer ?? 0)
        return ChangeBounds(prunedThrough: Int64(pruned), latest: Int64(latest))
    }

    @discardableResult
    public func pruneChanges(writtenBefore cutoff: Int64) async throws -> Int {
        try await writerLock.withLock("writer") {
            _ = try await writer.query("BEGIN IMMEDIATE")
            do {
                // A prefix of the feed goes: everything up to the newest change older than the cutoff.
                let newest = try await writer.query(
                    "SELECT MAX(position) AS through FROM record_changes WHERE at < ?", [.integer(Int(cutoff))])
                guard let through = newest.first?.column("through")?.integer else {
                    _ = try await writer.query("COMMIT")
                    return 0
                }
                _ = try await writer.query("DELETE FROM record_changes WHERE position <= ?", [.integer(through)])
                let removed = try await writer.query("SELECT changes() AS count")
                _ = try await writer.query(
                    "UPDATE record_changes_pruned SET through = MAX(through, ?) WHERE id = 1", [.integer(through)])
                _ = try await writer.query("COMMIT")
                return removed.first?.column("count")?.integer ?? 0
            } catch {
                _ = try? await writer.query("ROLLBACK")
                throw error
            }
        }
    }

    static func change(from row: StatementRow) throws -> RecordChange {
        guard let position = row.column("position")?.integer, let type = row.column("type")?.string,
            let id = row.column("record_id")?.string, let kindText = row.column("change")?.string,
            let kind = RecordChange.Kind(rawValue: kindText), let version = row.column("version")?.integer,
            let created = row.column("created_at")?.integer, let updated = row.column("updated_at")?.integer,
            let at = row.column("at")?.integer
        else {
            throw ServerError(.internalServerError, code: "corrupt_change", message: "A stored change is missing a column")
        }
        let record = StoredRecord(
            type: type, id: id, owner: row.column("owner")?.string, body: row.column("body")?.string ?? "{}",
            version: version, createdAt: Int64(created), updatedAt: Int64(updated), seq: 0,
            isPrivate: (row.column("private")?.integer ?? 0) != 0)
        return RecordChange(position: Int64(position), kind: kind, record: record, at: Int64(at))
    }
}
