import SQLiteNIO
internal import VaporCSQLite

extension SQLiteStorage {
    /// Migration 17: the ids of deleted users, and a check before every record write that refuses
    /// one owned by such an id with `RAISE(ABORT, 'account_deleted')`. Writes are serialised by the
    /// database's write lock, so a write either commits before a deletion (which then removes it)
    /// or meets the check.
    static let deletedUsersMigration: [String] = [
        "CREATE TABLE deleted_users (id TEXT PRIMARY KEY, deleted_at INTEGER NOT NULL)",
        """
        CREATE TRIGGER record_owner_deleted_insert BEFORE INSERT ON records WHEN NEW.owner IS NOT NULL BEGIN
            SELECT RAISE(ABORT, '\(AccountDeleted.message)') WHERE EXISTS (SELECT 1 FROM deleted_users WHERE id = NEW.owner);
        END
        """,
        """
        CREATE TRIGGER record_owner_deleted_update BEFORE UPDATE OF owner ON records WHEN NEW.owner IS NOT NULL BEGIN
            SELECT RAISE(ABORT, '\(AccountDeleted.message)') WHERE EXISTS (SELECT 1 FROM deleted_users WHERE id = NEW.owner);
        END
        """,
    ]

    public func deleteUser(id: String, transferringTo recipient: String?) async throws -> AccountRemoval? {
        try await withTransaction { db in
            guard
                let username = try await db.query("SELECT username FROM users WHERE id = ?", [.text(id)]).first?
                    .column("username")?.string
            else { return nil }
            if let recipient {
                let found = try await db.query("SELECT 1 AS found FROM users WHERE id = ?", [.text(recipient)])
                guard recipient != id, !found.isEmpty else { throw AccountDeletionFailure.unknownRecipient }
            }
            let now = Identifiers.nowMilliseconds()
            func run(_ sql: String, _ binds: [SQLiteData]? = nil) async throws -> Int {
                _ = try await db.query(sql, binds ?? [.text(id)])
                return try await db.query("SELECT changes() AS count").first?.column("count")?.integer ?? 0
            }
            _ = try await run(
                "INSERT OR IGNORE INTO deleted_users (id, deleted_at) VALUES (?, ?)", [.text(id), .integer(Int(now))])
            // Through the triggers on `records`: change rows, usage, quota checks.
            let records =
                if let recipient {
                    try await run(
                        "UPDATE records SET owner = ?, version = version + 1, updated_at = ? WHERE owner = ?",
                        [.text(recipient), .integer(Int(now)), .text(id)])
                } else {
                    try await run("DELETE FROM records WHERE owner = ?")
                }
            let families = "SELECT family FROM tokens WHERE user_id = ?"
            _ = try await run(
                "DELETE FROM token_successors WHERE hash IN (SELECT hash FROM tokens WHERE family IN (\(families)))")
            _ = try await run("DELETE FROM openid_families WHERE family IN (\(families))")
            let tokens = try await run("DELETE FROM tokens WHERE family IN (\(families)) OR user_id = ?", [.text(id), .text(id)])
            _ = try await run("DELETE FROM openid_codes WHERE code_hash IN (SELECT hash FROM auth_codes WHERE user_id = ?)")
            for statement in [
                "DELETE FROM auth_codes WHERE user_id = ?", "DELETE FROM device_codes WHERE user_id = ?",
                "DELETE FROM browser_sessions WHERE user_id = ?", "DELETE FROM mail_tokens WHERE user_id = ?",
                "DELETE FROM user_quotas WHERE user_id = ?",
                "DELETE FROM record_usage WHERE owner = ?", "DELETE FROM user_roles WHERE user_id = ?",
                "DELETE FROM user_identities WHERE user_id = ?", "DELETE FROM upstream_tokens WHERE user_id = ?",
                "DELETE FROM users WHERE id = ?",
            ] {
                _ = try await run(statement)
            }
            _ = try await run("DELETE FROM idempotency_keys WHERE caller = ?", [.text("user:" + id)])
            return AccountRemoval(userID: id, username: username, records: records, tokens: tokens, recipient: recipient)
        }
    }
}

extension AccountDeleted {
    /// The 401 for a failure of SQLite that the deleted-owner check raised.
    static func fromSQLite(_ error: any Error) -> ServerError? {
        guard let failure = error as? SQLiteFailure, failure.code & 0xff == SQLITE_CONSTRAINT,
            failure.message.contains(message)
        else { return nil }
        return self.error
    }
}
