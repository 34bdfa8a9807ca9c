import PostgresNIO

extension PostgresStorage: UserAdminStorage {
    /// Step 17: when an administrator disabled a user (SQLite's 21).
    static let disabledUsersSchema: [String] = ["ALTER TABLE users ADD COLUMN disabled_at BIGINT"]

    public func disableUser(id: String, now: Int64) async throws -> Bool {
        try await withTransaction { connection in
            // The row lock taken here holds back a concurrent enable until the sign-out commits.
            let updated = try await Self.rows(
                "UPDATE users SET disabled_at = COALESCE(disabled_at, \(now)) WHERE id = \(id) RETURNING id", on: connection)
            guard !updated.isEmpty else { return false }
            try await Self.signOut(id, on: connection)
            return true
        }
    }

    public func enableUser(id: String) async throws -> Bool {
        !(try await rows("UPDATE users SET disabled_at = NULL WHERE id = \(id) RETURNING id").isEmpty)
    }

    public func signOutEverywhere(userID: String) async throws -> Bool {
        try await withTransaction { connection in
            guard !(try await Self.rows("SELECT id FROM users WHERE id = \(userID) FOR SHARE", on: connection).isEmpty) else {
                return false
            }
            try await Self.signOut(userID, on: connection)
            return true
        }
    }

    /// Ends everything the user is signed in with, on `connection` inside the caller's
    /// transaction: every token of every family they have tokens in is revoked, their browser
    /// sessions removed, their unused authorization codes spent and their approved device codes denied.
    static func signOut(_ userID: String, on connection: PostgresConnection) async throws {
        try await execute(
            """
            UPDATE tokens SET state = 'revoked'
            WHERE state != 'revoked' AND (user_id = \(userID) OR family IN (SELECT family FROM tokens WHERE user_id = \(userID)))
            """, on: connection)
        try await execute("DELETE FROM browser_sessions WHERE user_id = \(userID)", on: connection)
        try await execute("UPDATE auth_codes SET used = TRUE WHERE user_id = \(userID)", on: connection)
        try await execute(
            "UPDATE device_codes SET status = 'denied' WHERE user_id = \(userID) AND status = 'approved'", on: connection)
    }

    public func users(_ search: UserSearch, after: String?, limit: Int) async throws -> UserPage {
        let size = UserSearch.pageSize(limit)
        let pattern = search.likePattern
        let everyone = search.text.isEmpty
        let query: PostgresQuery =
            """
            SELECT id, username, email, email_verified, disabled_at, created_at,
                (SELECT COALESCE(json_agg(role ORDER BY role), '[]'::json)::text FROM user_roles WHERE user_id = users.id) AS roles
            FROM users
            WHERE (\(everyone) OR lower(username) LIKE \(pattern) ESCAPE '\\' OR lower(email) LIKE \(pattern) ESCAPE '\\')
                AND (\(after == nil) OR lower(username) > lower(\(after ?? "")))
            ORDER BY lower(username) LIMIT \(Int64(size + 1))
            """
        return UserPage(
            rows: try await rows(query).map { row in
                UserSummary(
                    id: try row.string("id"), username: try row.string("username"), email: try row.optionalString("email"),
                    emailVerified: try row["email_verified"].decode(Bool.self),
                    roles: StoredText.strings(try row.string("roles")), disabledAt: try row.optionalInt64("disabled_at"),
                    createdAt: try row.int64("created_at"))
            }, limit: size)
    }
}
