import PostgresNIO

extension PostgresStorage {
    /// Step 13: the ids of deleted users (SQLite's migration 17), and a check before every record
    /// write that refuses one owned by such an id (SQLSTATE `OA001`).
    ///
    /// The check's trigger is named so that it fires after `record_quota` (PostgreSQL fires the
    /// triggers of one event in the order of their names), which has by then locked the owner's
    /// `record_usage` row until the write's transaction ends. A deletion locks that row too before
    /// it removes the records: a write that locked it first commits before the deletion reads the
    /// records (and is removed with them); one that waited for the deletion finds the id deleted.
    static let deletedUsersSchema: [String] = [
        "CREATE TABLE deleted_users (id TEXT PRIMARY KEY, deleted_at BIGINT NOT NULL)",
        """
        CREATE FUNCTION outpost_record_owner_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF EXISTS (SELECT 1 FROM deleted_users WHERE id = NEW.owner) THEN
                RAISE EXCEPTION '\(AccountDeleted.message)' USING ERRCODE = 'OA001';
            END IF;
            RETURN NEW;
        END $$
        """,
        """
        CREATE TRIGGER record_quota_owner_deleted BEFORE INSERT OR UPDATE OF body, owner ON records
        FOR EACH ROW WHEN (NEW.owner IS NOT NULL) EXECUTE FUNCTION outpost_record_owner_deleted()
        """,
    ]

    public func deleteUser(id: String, transferringTo recipient: String?) async throws -> AccountRemoval? {
        try await withTransaction { db in
            guard
                let username = try await Self.rows("SELECT username FROM users WHERE id = \(id) FOR UPDATE", on: db).first?[
                    "username"
                ].decode(String.self)
            else { return nil }
            if let recipient {
                let found = try await Self.rows("SELECT 1 AS found FROM users WHERE id = \(recipient) FOR SHARE", on: db)
                guard recipient != id, !found.isEmpty else { throw AccountDeletionFailure.unknownRecipient }
            }
            let now = Identifiers.nowMilliseconds()
            // Waits for the user's record writes in flight, and holds off the next ones until commit.
            try await Self.execute(
                """
                INSERT INTO record_usage AS u (owner, records, record_bytes) VALUES (\(id), 0, 0)
                ON CONFLICT (owner) DO UPDATE SET records = u.records
                """, on: db)
            try await Self.execute(
                "INSERT INTO deleted_users (id, deleted_at) VALUES (\(id), \(now)) ON CONFLICT (id) DO NOTHING", on: db)
            func count(_ query: PostgresQuery) async throws -> Int {
                Int(try await Self.rows(query, on: db).first?["count"].decode(Int64.self) ?? 0)
            }
            // Through the triggers on `records`: change rows, usage, quota checks.
            let records =
                if let recipient {
                    try await count(
                        """
                        WITH moved AS (UPDATE records SET owner = \(recipient), version = version + 1, updated_at = \(now)
                                       WHERE owner = \(id) RETURNING 1)
                        SELECT count(*) AS count FROM moved
                        """)
                } else {
                    try await count(
                        "WITH gone AS (DELETE FROM records WHERE owner = \(id) RETURNING 1) SELECT count(*) AS count FROM gone")
                }
            try await Self.execute(
                """
                DELETE FROM token_successors WHERE hash IN
                    (SELECT hash FROM tokens WHERE family IN (SELECT family FROM tokens WHERE user_id = \(id)))
                """, on: db)
            try await Self.execute(
                "DELETE FROM openid_families WHERE family IN (SELECT family FROM tokens WHERE user_id = \(id))", on: db)
            let tokens = try await count(
                """
                WITH gone AS (DELETE FROM tokens WHERE family IN (SELECT family FROM tokens WHERE user_id = \(id))
                              OR user_id = \(id) RETURNING 1)
                SELECT count(*) AS count FROM gone
                """)
            try await Self.execute(
                "DELETE FROM openid_codes WHERE code_hash IN (SELECT hash FROM auth_codes WHERE user_id = \(id))", on: db)
            try await Self.execute("DELETE FROM auth_codes WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM device_codes WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM browser_sessions WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM mail_tokens WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM user_quotas WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM record_usage WHERE owner = \(id)", on: db)
            try await Self.execute("DELETE FROM user_roles WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM user_identities WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM upstream_tokens WHERE user_id = \(id)", on: db)
            try await Self.execute("DELETE FROM users WHERE id = \(id)", on: db)
            try await Self.execute("DELETE FROM idempotency_keys WHERE caller = \("user:" + id)", on: db)
            return AccountRemoval(userID: id, username: username, records: records, tokens: tokens, recipient: recipient)
        }
    }
}

extension AccountDeleted {
    /// The 401 for an error PostgreSQL raised in the deleted-owner check (SQLSTATE `OA001`).
    static func fromPostgres(_ error: any Error) -> ServerError? {
        guard let error = error as? PSQLError, error.serverInfo?[.sqlState] == "OA001" else { return nil }
        return self.error
    }
}
