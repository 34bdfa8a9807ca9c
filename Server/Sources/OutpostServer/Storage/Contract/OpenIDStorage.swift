import Foundation
import SQLiteNIO

/// A key that signs ID tokens. The private key is kept in the database (PKCS#8 PEM) so that every
/// instance on one database signs with the same key and `outpost keys rotate` reaches them all.
public struct StoredSigningKey: Sendable, Hashable {
    /// The JWK thumbprint of the public key (RFC 7638), sent as `kid`.
    public var kid: String
    /// `RS256`.
    public var algorithm: String
    /// PEM. Never logged, never served.
    package var privateKeyPEM: String
    /// Milliseconds since 1970.
    public var createdAt: Int64
    /// When a newer key replaced it (milliseconds since 1970); `nil` for the key in use.
    public var retiredAt: Int64?
}

/// What OpenID Connect keeps: signing keys, and the sign-in context (nonce, auth_time) that an
/// authorization code and then its token family carry to the ID tokens they yield.
public protocol OpenIDStorage: Sendable {
    /// Every signing key, newest first.
    func signingKeys() async throws -> [StoredSigningKey]
    func saveSigningKey(_ key: StoredSigningKey) async throws
    /// Marks every key but `kid` retired at `at` (keys already retired keep their time).
    func retireSigningKeys(except kid: String, at: Int64) async throws
    /// Forgets keys retired before `before`; returns how many.
    func removeSigningKeys(retiredBefore before: Int64) async throws -> Int

    /// Remembers the nonce and authentication time of an authorization code (by the code's hash).
    func saveOpenIDCode(hash: String, nonce: String?, authTime: Int64, expiresAt: Int64) async throws
    /// Returns and forgets what ``saveOpenIDCode(hash:nonce:authTime:expiresAt:)`` kept.
    func takeOpenIDCode(hash: String) async throws -> (nonce: String?, authTime: Int64)?
    /// Remembers the authentication time of a refresh-token family, for ID tokens on refresh.
    func saveOpenIDFamily(_ family: String, authTime: Int64, expiresAt: Int64) async throws
    func openIDFamilyAuthTime(_ family: String) async throws -> Int64?
    /// When the browser session with this hash expires (milliseconds), if it is live.
    func browserSessionExpiry(hash: String, now: Int64) async throws -> Int64?
}

extension SQLiteStorage {
    /// The OpenID Connect schema step. Its number is the one given in ``migrations``; only the
    /// statements live here.
    static let openIDMigration: [String] = [
        """
        CREATE TABLE signing_keys (
            kid TEXT PRIMARY KEY,
            algorithm TEXT NOT NULL,
            private_key TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            retired_at INTEGER
        )
        """,
        """
        CREATE TABLE openid_codes (
            code_hash TEXT PRIMARY KEY,
            nonce TEXT,
            auth_time INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        )
        """,
        """
        CREATE TABLE openid_families (
            family TEXT PRIMARY KEY,
            auth_time INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        )
        """,
        // The CLI's client may ask for `openid`.
        """
        UPDATE oauth_clients SET scopes = json_insert(scopes, '$[#]', 'openid')
        WHERE id = 'outpost-cli' AND NOT EXISTS (SELECT 1 FROM json_each(oauth_clients.scopes) WHERE value = 'openid')
        """,
    ]

    public func signingKeys() async throws -> [StoredSigningKey] {
        try await connection.query("SELECT * FROM signing_keys ORDER BY created_at DESC, kid DESC").map { row in
            StoredSigningKey(
                kid: row.column("kid")?.string ?? "", algorithm: row.column("algorithm")?.string ?? "",
                privateKeyPEM: row.column("private_key")?.string ?? "",
                createdAt: Int64(row.column("created_at")?.integer ?? 0),
                retiredAt: row.column("retired_at")?.integer.map(Int64.init))
        }
    }

    public func saveSigningKey(_ key: StoredSigningKey) async throws {
        _ = try await connection.query(
            "INSERT INTO signing_keys (kid, algorithm, private_key, created_at, retired_at) VALUES (?, ?, ?, ?, ?)",
            [
                .text(key.kid), .text(key.algorithm), .text(key.privateKeyPEM), .integer(Int(key.createdAt)),
                key.retiredAt.map { .integer(Int($0)) } ?? .null,
            ])
    }

    public func retireSigningKeys(except kid: String, at: Int64) async throws {
        _ = try await connection.query(
            "UPDATE signing_keys SET retired_at = ? WHERE kid <> ? AND retired_at IS NULL", [.integer(Int(at)), .text(kid)])
    }

    public func removeSigningKeys(retiredBefore before: Int64) async throws -> Int {
        try await connection.query(
            "DELETE FROM signing_keys WHERE retired_at IS NOT NULL AND retired_at < ? RETURNING kid", [.integer(Int(before))]
        ).count
    }

    public func saveOpenIDCode(hash: String, nonce: String?, authTime: Int64, expiresAt: Int64) async throws {
        _ = try await connection.query(
            "DELETE FROM openid_codes WHERE expires_at < ?", [.integer(Int(Identifiers.nowMilliseconds()))])
        _ = try await connection.query(
            "INSERT INTO openid_codes (code_hash, nonce, auth_time, expires_at) VALUES (?, ?, ?, ?)",
            [.text(hash), nonce.map(SQLiteData.text) ?? .null, .integer(Int(authTime)), .integer(Int(expiresAt))])
    }

    public func takeOpenIDCode(hash: String) async throws -> (nonce: String?, authTime: Int64)? {
        guard
            let row = try await connection.query(
                "DELETE FROM openid_codes WHERE code_hash = ? RETURNING nonce, auth_time", [.text(hash)]
            ).first
        else { return nil }
        return (row.column("nonce")?.string, Int64(row.column("auth_time")?.integer ?? 0))
    }

    public func saveOpenIDFamily(_ family: String, authTime: Int64, expiresAt: Int64) async throws {
        _ = try await connection.query(
            "DELETE FROM openid_families WHERE expires_at < ?", [.integer(Int(Identifiers.nowMilliseconds()))])
        _ = try await connection.query(
            "INSERT OR REPLACE INTO openid_families (family, auth_time, expires_at) VALUES (?, ?, ?)",
            [.text(family), .integer(Int(authTime)), .integer(Int(expiresAt))])
    }

    public func openIDFamilyAuthTime(_ family: String) async throws -> Int64? {
        try await connection.query("SELECT auth_time FROM openid_families WHERE family = ?", [.text(family)]).first?
            .column("auth_time")?.integer.map(Int64.init)
    }

    public func browserSessionExpiry(hash: String, now: Int64) async throws -> Int64? {
        try await connection.query(
            "SELECT expires_at FROM browser_sessions WHERE hash = ? AND expires_at > ?", [.text(hash), .integer(Int(now))]
        ).first?.column("expires_at")?.integer.map(Int64.init)
    }
}
