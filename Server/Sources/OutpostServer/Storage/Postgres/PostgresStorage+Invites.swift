import PostgresNIO

extension PostgresStorage {
    /// Migration 5: one-time invite codes for sign-up, by hash (SQLite's 10).
    static let invitesSchema: [String] = [
        "CREATE TABLE invites (hash TEXT PRIMARY KEY, expires_at BIGINT NOT NULL, created_at BIGINT NOT NULL)",
        "CREATE INDEX invites_by_expiry ON invites (expires_at)",
    ]

    public func saveInvite(hash: String, expiresAt: Int64) async throws {
        let now = Identifiers.nowMilliseconds()
        try await withTransaction { connection in
            try await Self.execute("DELETE FROM invites WHERE expires_at <= \(now)", on: connection)
            try await Self.execute(
                "INSERT INTO invites (hash, expires_at, created_at) VALUES (\(hash), \(expiresAt), \(now))", on: connection)
        }
    }

    public func createUser(username: String, passwordHash: String, inviteHash: String, now: Int64) async throws
        -> StoredUser
    {
        let id = "u_" + Identifiers.random()
        do {
            return try await withTransaction { connection in
                // The row lock DELETE takes makes a concurrent use of the same code wait, then find it gone.
                let spent = try await Self.rows(
                    "DELETE FROM invites WHERE hash = \(inviteHash) AND expires_at > \(now) RETURNING hash", on: connection)
                guard !spent.isEmpty else { throw UserWriteFailure.inviteInvalid }
                try await Self.execute(
                    "INSERT INTO users (id, username, password_hash, created_at) VALUES (\(id), \(username), \(passwordHash), \(now))",
                    on: connection)
                return StoredUser(id: id, username: username, passwordHash: passwordHash, entitlements: [], createdAt: now)
            }
        } catch  where Self.isUniqueViolation(error, constraint: "users_by_username") {
            throw UserWriteFailure.usernameTaken
        }
    }
}
