import PostgresNIO

extension PostgresStorage: AuditStorage {
    /// Step 15: the audit log (SQLite's 19). Append-only: a trigger refuses every `UPDATE`;
    /// rows go only by age (``pruneAuditEvents(before:)``).
    static let auditSchema: [String] = [
        """
        CREATE TABLE audit_events (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at BIGINT NOT NULL,
            actor TEXT,
            action TEXT NOT NULL,
            subject TEXT,
            client_address TEXT,
            detail TEXT NOT NULL DEFAULT '{}'
        )
        """,
        "CREATE INDEX audit_events_by_time ON audit_events (at)",
        """
        CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'audit_events is append-only'; END $$
        """,
        """
        CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
        FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()
        """,
    ]

    public func appendAuditEvent(_ event: AuditEvent) async throws {
        try await execute(
            """
            INSERT INTO audit_events (at, actor, action, subject, client_address, detail)
            VALUES (\(event.time), \(event.actor), \(event.action), \(event.subject), \(event.clientAddress), \(event.detailText))
            """)
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        let limit = Int64(max(0, query.limit))
        let before = query.beforeID > 0 ? query.beforeID : Int64.max
        return try await rows(
            """
            SELECT id, at, actor, action, subject, client_address, detail FROM audit_events
            WHERE id > \(query.afterID) AND id < \(before) AND at >= \(query.since)
            AND left(action, length(\(query.actionPrefix))) = \(query.actionPrefix)
            ORDER BY id \(unescaped: query.newestFirst ? "DESC" : "ASC") LIMIT \(limit)
            """
        ).map { row in
            AuditEvent(
                id: try row.int64("id"), time: try row.int64("at"), actor: try row.optionalString("actor"),
                action: try row.string("action"), subject: try row.optionalString("subject"),
                clientAddress: try row.optionalString("client_address"),
                detail: AuditEvent.detail(fromText: try row.string("detail")))
        }
    }

    public func pruneAuditEvents(before: Int64) async throws -> Int {
        try await rows("DELETE FROM audit_events WHERE at < \(before) RETURNING id").count
    }
}
