import SQLiteNIO

extension SQLiteStorage: MailStorage {
    /// Migration 20: users' e-mail addresses (lower case) and the tokens mailed to them.
    static let mailMigration: [String] = [
        "ALTER TABLE users ADD COLUMN email TEXT",
        "ALTER TABLE users ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX users_by_email ON users (email)",
        """
        CREATE TABLE mail_tokens (
            hash TEXT PRIMARY KEY,
            purpose TEXT NOT NULL,
            user_id TEXT NOT NULL,
            email TEXT NOT NULL,
            expires_at INTEGER NOT NULL,
            used_at INTEGER
        )
        """,
        "CREATE INDEX mail_tokens_by_user ON mail_tokens (user_id)",
        "CREATE INDEX mail_tokens_by_expiry ON mail_tokens (expires_at)",
    ]

    /// The condition that a token row is usable at `?` (the bind after the hash and purpose).
    private static let usable = """
        used_at IS NULL AND expires_at > ? AND email = (SELECT email FROM users WHERE users.id = mail_tokens.user_id)
        """

    public func setEmail(_ email: String?, verified: Bool, userID: String) async throws -> Bool {
        try await withTransaction { db in
            let updated = try await db.query(
                "UPDATE users SET email = ?, email_verified = ? WHERE id = ? RETURNING id",
                [
                    email.map { SQLiteData.text($0.lowercased()) } ?? SQLiteData.null, .integer(verified && email != nil ? 1 : 0),
                    .text(userID),
                ])
            _ = try await db.query(
                "UPDATE mail_tokens SET used_at = ? WHERE user_id = ? AND purpose = 'verify' AND used_at IS NULL",
                [.integer(Int(Identifiers.nowMilliseconds())), .text(userID)])
            return !updated.isEmpty
        }
    }

    public func email(userID: String) async throws -> StoredEmail? {
        guard let row = try await connection.query("SELECT email, email_verified FROM users WHERE id = ?", [.text(userID)]).first,
            let address = row.column("email")?.string
        else { return nil }
        return StoredEmail(address: address, verified: (row.column("email_verified")?.integer ?? 0) != 0)
    }

    public func users(verifiedEmail email: String, limit: Int) async throws -> [String] {
        try await connection.query(
            "SELECT id FROM users WHERE email = ? AND email_verified = 1 ORDER BY created_at LIMIT ?",
            [.text(email.lowercased()), .integer(limit)]
        ).compactMap { $0.column("id")?.string }
    }

    public func saveMailToken(_ token: StoredMailToken) async throws {
        try await withTransaction { db in
            _ = try await db.query(
                "DELETE FROM mail_tokens WHERE expires_at <= ?", [.integer(Int(Identifiers.nowMilliseconds()))])
            _ = try await db.query(
                "INSERT INTO mail_tokens (hash, purpose, user_id, email, expires_at) VALUES (?, ?, ?, ?, ?)",
                [
                    .text(token.hash), .text(token.purpose.rawValue), .text(token.userID), .text(token.email.lowercased()),
                    .integer(Int(token.expiresAt)),
                ])
        }
    }

    public func mailToken(hash: String, purpose: StoredMailToken.Purpose, now: Int64) async throws -> StoredMailToken? {
        try await connection.query(
            "SELECT user_id, email, expires_at FROM mail_tokens WHERE hash = ? AND purpose = ? AND \(Self.usable)",
            [.text(hash), .text(purpose.rawValue), .integer(Int(now))]
        ).first.map { row in
            StoredMailToken(
                hash: hash, purpose: purpose, userID: row.column("user_id")?.string ?? "",
                email: row.column("email")?.string ?? "", expiresAt: Int64(row.column("expires_at")?.integer ?? 0))
        }
    }

    /// Spends the token `hash` of `purpose` on `db`; the user's id, or `nil` when it is not usable.
    private static func spend(_ hash: String, _ purpose: StoredMailToken.Purpose, now: Int64, on db: BusyBoundedConnection)
        async throws -> String?
    {
        try await db.query(
            "UPDATE mail_tokens SET used_at = ? WHERE hash = ? AND purpose = ? AND \(usable) RETURNING user_id",
            [.integer(Int(now)), .text(hash), .text(purpose.rawValue), .integer(Int(now))]
        ).first?.column("user_id")?.string
    }

    public func resetPassword(tokenHash: String, passwordHash: String, now: Int64) async throws -> String? {
        try await withTransaction { db in
            guard let userID = try await Self.spend(tokenHash, .reset, now: now, on: db) else { return nil }
            let user = SQLiteData.text(userID)
            _ = try await db.query("UPDATE users SET password_hash = ? WHERE id = ?", [.text(passwordHash), user])
            try await Self.signOut(userID, on: db)
            _ = try await db.query(
                "UPDATE mail_tokens SET used_at = ? WHERE user_id = ? AND purpose = 'reset' AND used_at IS NULL",
                [.integer(Int(now)), user])
            return userID
        }
    }

    public func verifyEmail(tokenHash: String, now: Int64) async throws -> String? {
        try await withTransaction { db in
            guard let userID = try await Self.spend(tokenHash, .verify, now: now, on: db) else { return nil }
            _ = try await db.query("UPDATE users SET email_verified = 1 WHERE id = ?", [.text(userID)])
            return userID
        }
    }
}
