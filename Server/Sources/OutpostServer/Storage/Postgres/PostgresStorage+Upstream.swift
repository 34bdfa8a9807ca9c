import Foundation
import PostgresNIO

extension PostgresStorage: UpstreamProviderStorage {
    /// Step 12: upstream OpenID Connect providers, and the e-mail a linked identity last signed in with.
    static let upstreamSchema: [String] = [
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
            created_at BIGINT NOT NULL
        )
        """,
        "ALTER TABLE user_identities ADD COLUMN email TEXT",
        "ALTER TABLE user_identities ADD COLUMN email_verified BOOLEAN",
    ]

    public func upstreamProviders() async throws -> [UpstreamProvider] {
        try await rows("SELECT * FROM upstream_providers ORDER BY name").map(Self.upstreamProvider)
    }

    public func upstreamProvider(name: String) async throws -> UpstreamProvider? {
        try await rows("SELECT * FROM upstream_providers WHERE name = \(name)").first.map(Self.upstreamProvider)
    }

    public func addUpstreamProvider(_ provider: UpstreamProvider) async throws -> Bool {
        try await !rows(
            """
            INSERT INTO upstream_providers
                (name, issuer, kind, client_ids, client_secret, apple_team_id, apple_key_id, apple_private_key, created_at)
            VALUES (\(provider.name), \(provider.issuer), \(provider.kind.rawValue), \(provider.clientIDsText),
                \(provider.clientSecret), \(provider.appleTeamID), \(provider.appleKeyID), \(provider.applePrivateKeyPEM),
                \(provider.createdAt))
            ON CONFLICT DO NOTHING RETURNING name
            """
        ).isEmpty
    }

    public func removeUpstreamProvider(name: String) async throws -> Bool {
        try await !rows("DELETE FROM upstream_providers WHERE name = \(name) RETURNING name").isEmpty
    }

    public func saveIdentityEmail(provider: String, subject: String, email: String?, verified: Bool?) async throws {
        _ = try await rows(
            """
            UPDATE user_identities SET email = \(email), email_verified = \(verified)
            WHERE provider = \(provider) AND subject = \(subject) RETURNING provider
            """)
    }

    public func linkIdentity(provider: String, subject: String, userID: String) async throws -> String? {
        _ = try await rows(
            """
            INSERT INTO user_identities (provider, subject, user_id) VALUES (\(provider), \(subject), \(userID))
            ON CONFLICT (provider, subject) DO NOTHING RETURNING user_id
            """)
        return try await rows(
            "SELECT user_id FROM user_identities WHERE provider = \(provider) AND subject = \(subject)"
        ).first?["user_id"].decode(String.self)
    }

    public func identityEmail(provider: String, subject: String) async throws -> (email: String?, verified: Bool?) {
        let row = try await rows(
            "SELECT email, email_verified FROM user_identities WHERE provider = \(provider) AND subject = \(subject)"
        ).first
        return (try row?["email"].decode(String?.self), try row?["email_verified"].decode(Bool?.self))
    }

    public func linkedIdentities(userID: String) async throws -> [IdentityLink] {
        try await rows(
            """
            SELECT provider, subject, email, email_verified FROM user_identities WHERE user_id = \(userID)
            ORDER BY provider, subject
            """
        ).map { row in
            IdentityLink(
                provider: try row["provider"].decode(String.self), subject: try row["subject"].decode(String.self),
                email: try row["email"].decode(String?.self), emailVerified: try row["email_verified"].decode(Bool?.self))
        }
    }

    public func unlinkIdentity(provider: String, subject: String, userID: String) async throws -> IdentityUnlinking {
        try await withTransaction { db in
            // The user's row, locked: two unlinks of the last two identities of one user take turns,
            // and the second sees the first.
            guard
                let user = try await Self.rows(
                    "SELECT password_hash IS NOT NULL AS has_password FROM users WHERE id = \(userID) FOR UPDATE", on: db
                ).first
            else { return .notLinked }
            let linked = try await Self.rows(
                """
                SELECT 1 AS found FROM user_identities
                WHERE provider = \(provider) AND subject = \(subject) AND user_id = \(userID)
                """, on: db)
            guard !linked.isEmpty else { return .notLinked }
            let count =
                try await Self.rows(
                    "SELECT count(*) AS count FROM user_identities WHERE user_id = \(userID)", on: db
                ).first?["count"].decode(Int64.self) ?? 0
            guard try user["has_password"].decode(Bool.self) || count > 1 else { return .lastSignInMethod }
            try await Self.execute(
                """
                DELETE FROM user_identities WHERE provider = \(provider) AND subject = \(subject) AND user_id = \(userID)
                """, on: db)
            return .unlinked
        }
    }

    static func upstreamProvider(_ row: PostgresRandomAccessRow) throws -> UpstreamProvider {
        UpstreamProvider(
            name: try row["name"].decode(String.self), issuer: try row["issuer"].decode(String.self),
            kind: UpstreamProvider.Kind(rawValue: try row["kind"].decode(String.self)) ?? .openID,
            clientIDs: UpstreamProvider.clientIDs(fromText: try row["client_ids"].decode(String.self)),
            clientSecret: try row["client_secret"].decode(String?.self),
            appleTeamID: try row["apple_team_id"].decode(String?.self),
            appleKeyID: try row["apple_key_id"].decode(String?.self),
            applePrivateKeyPEM: try row["apple_private_key"].decode(String?.self),
            createdAt: try row["created_at"].decode(Int64.self))
    }
}
