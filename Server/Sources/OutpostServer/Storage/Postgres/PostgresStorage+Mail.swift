import PostgresNIO

extension PostgresStorage: MailStorage {
    /// Step 16: users' e-mail addresses (lower case) and the tokens mailed to them.
    static let mailSchema: [String] = [
        "ALTER TABLE users ADD COLUMN email TEXT",
        "ALTER TABLE users ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT FALSE",
        "CREATE INDEX users_by_email ON users (email)",
        """
        CREATE TABLE mail_tokens (
            hash TEXT PRIMARY KEY,
            purpose TEXT NOT NULL,
            user_id TEXT NOT NULL,
            email TEXT NOT NULL,
            expires_at BIGINT NOT NULL,
            used_at BIGINT
        )
        """,
        "CREATE INDEX mail_tokens_by_user ON mail_tokens (user_id)",
        "CREATE INDEX mail_tokens_by_expiry ON mail_tokens (expires_at)",
    ]

    public func setEmail(_ email: String?, verified: Bool, userID: String) async throws -> Bool {
        let address = email?.lowercased()
        let isVerified = verified && email != nil
        let now = Identifiers.nowMilliseconds()
        return try await withTransaction { connection in
            let updated = try await Self.rows(
                "UPDATE users SET email = \(address), email_verified = \(isVerified) WHERE id = \(userID) RETURNING id",
                on: connection)
            try await Self.execute(
                "UPDATE mail_tokens SET used_at = \(now) WHERE user_id = \(userID) AND purpose = 'verify' AND used_at IS NULL",
                on: connection)
            return !updated.isEmpty
        }
    }

    public func email(userID: String) async throws -> StoredEmail? {
        guard let row = try await rows("SELECT email, email_verified FROM users WHERE id = \(userID)").first,
            let address = try row["email"].decode(String?.self)
        else { return nil }
        return StoredEmail(address: address, verified: try row["email_verified"].decode(Bool.self))
    }

    public func users(verifiedEmail email: String, limit: Int) async throws -> [String] {
        try await rows(
            """
            SELECT id FROM users WHERE email = \(email.lowercased()) AND email_verified ORDER BY created_at
            LIMIT \(Int64(limit))
            """
        ).map { try $0["id"].decode(String.self) }
    }

    public func saveMailToken(_ token: StoredMailToken) async throws {
        let now = Identifiers.nowMilliseconds()
        try await withTransaction { connection in
            try await Self.execute("DELETE FROM mail_tokens WHERE expires_at <= \(now)", on: connection)
            try await Self.execute(
                """
                INSERT INTO mail_tokens (hash, purpose, user_id, email, expires_at)
                VALUES (\(token.hash), \(token.purpose.rawValue), \(token.userID), \(token.email.lowercased()), \(token.expiresAt))
                """, on: connection)
        }
    }

    public func mailToken(hash: String, purpose: StoredMailToken.Purpose, now: Int64) async throws -> StoredMailToken? {
        guard
            let row = try await rows(
                """
                SELECT user_id, email, expires_at FROM mail_tokens
                WHERE hash = \(hash) AND purpose = \(purpose.rawValue) AND used_at IS NULL AND expires_at > \(now)
                    AND email = (SELECT email FROM users WHERE users.id = mail_tokens.user_id)
                """
            ).first
        else { return nil }
        return StoredMailToken(
            hash: hash, purpose: purpose, userID: try row["user_id"].decode(String.self),
            email: try row["email"].decode(String.self), expiresAt: try row["expires_at"].decode(Int64.self))
    }

    /// Spends the token `hash` of `purpose`; the user's id, or `nil` when it is not usable.
    private static func spend(_ hash: String, _ purpose: StoredMailToken.Purpose, now: Int64, on connection: PostgresConnection)
        async throws -> String?
    {
        try await rows(
            """
            UPDATE mail_tokens SET used_at = \(now)
            WHERE hash = \(hash) AND purpose = \(purpose.rawValue) AND used_at IS NULL AND expires_at > \(now)
                AND email = (SELECT email FROM users WHERE users.id = mail_tokens.user_id)
            RETURNING user_id
            """, on: connection
        ).first.map { try $0["user_id"].decode(String.self) }
    }

    public func resetPassword(tokenHash: String, passwordHash: String, now: Int64) async throws -> String? {
        try await withTransaction { connection -> String? in
            guard let userID = try await Self.spend(tokenHash, .reset, now: now, on: connection) else { return nil }
            try await Self.execute("UPDATE users SET password_hash = \(passwordHash) WHERE id = \(userID)", on: connection)
            try await Self.signOut(userID, on: connection)
            try await Self.execute(
                "UPDATE mail_tokens SET used_at = \(now) WHERE user_id = \(userID) AND purpose = 'reset' AND used_at IS NULL",
                on: connection)
            return userID
        }
    }

    public func verifyEmail(tokenHash: String, now: Int64) async throws -> String? {
        try await withTransaction { connection in
            guard let userID = try await Self.spend(tokenHash, .verify, now: now, on: connection) else { return nil }
            try await Self.execute("UPDATE users SET email_verified = TRUE WHERE id = \(userID)", on: connection)
            return userID
        }
    }
}
