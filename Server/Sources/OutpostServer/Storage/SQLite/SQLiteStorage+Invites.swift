import SQLiteNIO

extension SQLiteStorage {
    /// Migration 10: one-time invite codes for sign-up, by hash.
    static let invitesMigration: [String] = [
        "CREATE TABLE invites (hash TEXT PRIMARY KEY, expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL)",
        "CREATE INDEX invites_by_expiry ON invites (expires_at)",
    ]

    public func saveInvite(hash: String, expiresAt: Int64) async throws {
        let now = Identifiers.nowMilliseconds()
        try await withTransaction { connection in
            _ = try await connection.query("DELETE FROM invites WHERE expires_at <= ?", [.integer(Int(now))])
            _ = try await connection.query(
                "INSERT INTO invites (hash, expires_at, created_at) VALUES (?, ?, ?)",
                [.text(hash), .integer(Int(expiresAt)), .integer(Int(now))])
        }
    }

    public func createUser(username: String, passwordHash: String, inviteHash: String, now: Int64) async throws
        -> StoredUser
    {
        let id = "u_" + Identifiers.random()
        return try await withTransaction { connection in
            let spent = try await connection.query(
                "DELETE FROM invites WHERE hash = ? AND expires_at > ? RETURNING hash", [.text(inviteHash), .integer(Int(now))])
            guard !spent.isEmpty else { throw UserWriteFailure.inviteInvalid }
            do {
                _ = try await connection.query(
                    "INSERT INTO users (id, username, password_hash, created_at) VALUES (?, ?, ?, ?)",
                    [.text(id), .text(username), .text(passwordHash), .integer(Int(now))])
            } catch let error as SQLiteFailure where error.isUniqueConstraint {
                throw UserWriteFailure.usernameTaken
            }
            return StoredUser(id: id, username: username, passwordHash: passwordHash, entitlements: [], createdAt: now)
        }
    }
}
