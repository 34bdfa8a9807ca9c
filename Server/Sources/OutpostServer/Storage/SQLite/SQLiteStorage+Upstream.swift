import Foundation
import SQLiteNIO

extension SQLiteStorage: UpstreamProviderStorage {
    /// Upstream OpenID Connect providers, and the e-mail a linked identity last signed in with.
    static let upstreamMigration: [String] = [
        """
        CREATE TABLE upstream_providers (
            name TEXT PRIMARY KEY,
            issuer TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            client_ids TEXT NOT NULL,
            client_secret TEXT,
            apple_team_id TEXT,
            apple_key_id TEXT,
            apple_private_key TEXT,
            created_at INTEGER NOT NULL
        )
        """,
        "ALTER TABLE user_identities ADD COLUMN email TEXT",
        "ALTER TABLE user_identities ADD COLUMN email_verified INTEGER",
    ]

    public func upstreamProviders() async throws -> [UpstreamProvider] {
        try await connection.query("SELECT * FROM upstream_providers ORDER BY name").map(Self.upstreamProvider)
    }

    public func upstreamProvider(name: String) async throws -> UpstreamProvider? {
        try await connection.query("SELECT * FROM upstream_providers WHERE name = ?", [.text(name)]).first.map(
            Self.upstreamProvider)
    }

    public func addUpstreamProvider(_ provider: UpstreamProvider) async throws -> Bool {
        func text(_ value: String?) -> SQLiteData { value.map(SQLiteData.text) ?? .null }
        return try await !connection.query(
            """
            INSERT INTO upstream_providers
                (name, issuer, kind, client_ids, client_secret, apple_team_id, apple_key_id, apple_private_key, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING name
            """,
            [
                .text(provider.name), .text(provider.issuer), .text(provider.kind.rawValue), .text(provider.clientIDsText),
                text(provider.clientSecret), text(provider.appleTeamID), text(provider.appleKeyID),
                text(provider.applePrivateKeyPEM), .integer(Int(provider.createdAt)),
            ]
        ).isEmpty
    }

    public func removeUpstreamProvider(name: String) async throws -> Bool {
        try await !connection.query("DELETE FROM upstream_providers WHERE name = ? RETURNING name", [.text(name)]).isEmpty
    }

    public func saveIdentityEmail(provider: String, subject: String, email: String?, verified: Bool?) async throws {
        _ = try await connection.query(
            "UPDATE user_identities SET email = ?, email_verified = ? WHERE provider = ? AND subject = ?",
            [
                email.map(SQLiteData.text) ?? .null, verified.map { .integer($0 ? 1 : 0) } ?? .null, .text(provider),
                .text(subject),
            ])
    }

    public func linkIdentity(provider: String, subject: String, userID: String) async throws -> String? {
        _ = try await connection.query(
            "INSERT INTO user_identities (provider, subject, user_id) VALUES (?, ?, ?) ON CONFLICT (provider, subject) DO NOTHING",
            [.text(provider), .text(subject), .text(userID)])
        return try await connection.query(
            "SELECT user_id FROM user_identities WHERE provider = ? AND subject = ?", [.text(provider), .text(subject)]
        ).first?.column("user_id")?.string
    }

    public func identityEmail(provider: String, subject: String) async throws -> (email: String?, verified: Bool?) {
        let row = try await connection.query(
            "SELECT email, email_verified FROM user_identities WHERE provider = ? AND subject = ?",
            [.text(provider), .text(subject)]
        ).first
        return (row?.column("email")?.string, row?.column("email_verified")?.integer.map { $0 != 0 })
    }

    public func linkedIdentities(userID: String) async throws -> [IdentityLink] {
        try await connection.query(
            "SELECT provider, subject, email, email_verified FROM user_identities WHERE user_id = ? ORDER BY provider, subject",
            [.text(userID)]
        ).map { row in
            IdentityLink(
                provider: row.column("provider")?.string ?? "", subject: row.column("subject")?.string ?? "",
                email: row.column("email")?.string, emailVerified: row.column("email_verified")?.integer.map { $0 != 0 })
        }
    }

    public func unlinkIdentity(provider: String, subject: String, userID: String) async throws -> IdentityUnlinking {
        // The transaction holds the database's write lock, so two unlinks of one user's last two
        // identities run one after the other and the second sees the first.
        try await withTransaction { db in
            let linked = try await db.query(
                "SELECT 1 AS found FROM user_identities WHERE provider = ? AND subject = ? AND user_id = ?",
                [.text(provider), .text(subject), .text(userID)])
            guard !linked.isEmpty else { return .notLinked }
            let row = try await db.query(
                """
                SELECT (SELECT password_hash IS NOT NULL FROM users WHERE id = ?1) AS has_password,
                       (SELECT count(*) FROM user_identities WHERE user_id = ?1) AS identities
                """, [.text(userID)]
            ).first
            let hasPassword = (row?.column("has_password")?.integer ?? 0) != 0
            guard hasPassword || (row?.column("identities")?.integer ?? 0) > 1 else { return .lastSignInMethod }
            _ = try await db.query(
                "DELETE FROM user_identities WHERE provider = ? AND subject = ? AND user_id = ?",
                [.text(provider), .text(subject), .text(userID)])
            return .unlinked
        }
    }

    static func upstreamProvider(_ row: StatementRow) -> UpstreamProvider {
        UpstreamProvider(
            name: row.column("name")?.string ?? "", issuer: row.column("issuer")?.string ?? "",
            kind: UpstreamProvider.Kind(rawValue: row.column("kind")?.string ?? "") ?? .openID,
            clientIDs: UpstreamProvider.clientIDs(fromText: row.column("client_ids")?.string ?? "[]"),
            clientSecret: row.column("client_secret")?.string, appleTeamID: row.column("apple_team_id")?.string,
            appleKeyID: row.column("apple_key_id")?.string, applePrivateKeyPEM: row.column("apple_private_key")?.string,
            createdAt: Int64(row.column("created_at")?.integer ?? 0))
    }
}
