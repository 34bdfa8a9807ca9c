import SQLiteNIO

extension SQLiteStorage: UserAdminStorage {
    /// Migration 21: when an administrator disabled a user.
    static let disabledUsersMigration: [String] = ["ALTER TABLE users ADD COLUMN disabled_at INTEGER"]

    public func disableUser(id: String, now: Int64) async throws -> Bool {
        try await withTransaction { db in
            let updated = try await db.query(
                "UPDATE users SET disabled_at = COALESCE(disabled_at, ?) WHERE id = ? RETURNING id",
                [.integer(Int(now)), .text(id)])
            guard !updated.isEmpty else { return false }
            try await Self.signOut(id, on: db)
            return true
        }
    }

    public func enableUser(id: String) async throws -> Bool {
        !(try await connection.query("UPDATE users SET disabled_at = NULL WHERE id = ? RETURNING id", [.text(id)]).isEmpty)
    }

    public func signOutEverywhere(userID: String) async throws -> Bool {
        try await withTransaction { db in
            guard !(try await db.query("SELECT id FROM users WHERE id = ?", [.text(userID)]).isEmpty) else { return false }
            try await Self.signOut(userID, on: db)
            return true
        }
    }

    /// Ends everything the user is signed in with, on `db` inside the caller's transaction: every
    /// token of every family they have tokens in is revoked, their browser sessions removed, their
    /// unused authorization codes spent and their approved device codes denied.
    static func signOut(_ userID: String, on db: BusyBoundedConnection) async throws {
        let user = SQLiteData.text(userID)
        _ = try await db.query(
            """
            UPDATE tokens SET state = 'revoked'
            WHERE state != 'revoked' AND (user_id = ? OR family IN (SELECT family FROM tokens WHERE user_id = ?))
            """, [user, user])
        _ = try await db.query("DELETE FROM browser_sessions WHERE user_id = ?", [user])
        _ = try await db.query("UPDATE auth_codes SET used = 1 WHERE user_id = ?", [user])
        _ = try await db.query("UPDATE device_codes SET status = 'denied' WHERE user_id = ? AND status = 'approved'", [user])
    }

    public func users(_ search: UserSearch, after: String?, limit: Int) async throws -> UserPage {
        let size = UserSearch.pageSize(limit)
        var conditions: [String] = []
        var binds: [SQLiteData] = []
        if !search.text.isEmpty {
            conditions.append("(username LIKE ? ESCAPE '\\' OR email LIKE ? ESCAPE '\\')")
            binds += [.text(search.likePattern), .text(search.likePattern)]
        }
        if let after {
            // The column's NOCASE collation: the order of ORDER BY username.
            conditions.append("username > ?")
            binds.append(.text(after))
        }
        binds.append(.integer(size + 1))
        let rows = try await connection.query(
            """
            SELECT id, username, email, email_verified, disabled_at, created_at,
                (SELECT json_group_array(role) FROM (SELECT role FROM user_roles WHERE user_id = users.id ORDER BY role)) AS roles
            FROM users \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
            ORDER BY username LIMIT ?
            """, binds)
        return UserPage(
            rows: rows.map { row in
                UserSummary(
                    id: row.column("id")?.string ?? "", username: row.column("username")?.string ?? "",
                    email: row.column("email")?.string, emailVerified: (row.column("email_verified")?.integer ?? 0) != 0,
                    roles: StoredText.strings(row.column("roles")?.string),
                    disabledAt: row.column("disabled_at")?.integer.map(Int64.init),
                    createdAt: Int64(row.column("created_at")?.integer ?? 0))
            }, limit: size)
    }
}
