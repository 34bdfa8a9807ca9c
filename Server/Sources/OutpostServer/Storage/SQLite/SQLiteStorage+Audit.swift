import SQLiteNIO

extension SQLiteStorage: AuditStorage {
    /// Migration 19: the audit log. Append-only: a trigger refuses every `UPDATE`; rows go only by
    /// age (``pruneAuditEvents(before:)``).
    static let auditMigration: [String] = [
        """
        CREATE TABLE audit_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            actor TEXT,
            action TEXT NOT NULL,
            subject TEXT,
            client_address TEXT,
            detail TEXT NOT NULL DEFAULT '{}'
        )
        """,
        "CREATE INDEX audit_events_by_time ON audit_events (at)",
        """
        CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END
        """,
    ]

    public func appendAuditEvent(_ event: AuditEvent) async throws {
        _ = try await connection.query(
            "INSERT INTO audit_events (at, actor, action, subject, client_address, detail) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .integer(Int(event.time)), event.actor.map { .text($0) } ?? .null, .text(event.action),
                event.subject.map { .text($0) } ?? .null, event.clientAddress.map { .text($0) } ?? .null,
                .text(event.detailText),
            ])
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        try await reader.query(
            """
            SELECT id, at, actor, action, subject, client_address, detail FROM audit_events
            WHERE id > ? AND id < ? AND at >= ? AND substr(action, 1, length(?)) = ?
            ORDER BY id \(query.newestFirst ? "DESC" : "ASC") LIMIT ?
            """,
            [
                .integer(Int(query.afterID)), .integer(query.beforeID > 0 ? Int(query.beforeID) : Int.max),
                .integer(Int(query.since)), .text(query.actionPrefix),
                .text(query.actionPrefix), .integer(max(0, query.limit)),
            ]
        ).map { row in
            AuditEvent(
                id: Int64(row.column("id")?.integer ?? 0), time: Int64(row.column("at")?.integer ?? 0),
                actor: row.column("actor")?.string, action: row.column("action")?.string ?? "",
                subject: row.column("subject")?.string, clientAddress: row.column("client_address")?.string,
                detail: AuditEvent.detail(fromText: row.column("detail")?.string ?? "{}"))
        }
    }

    public func pruneAuditEvents(before: Int64) async throws -> Int {
        try await connection.query("DELETE FROM audit_events WHERE at < ? RETURNING id", [.integer(Int(before))]).count
    }
}
