import Foundation
import PostgresNIO

extension PostgresStorage {
    public func signingKeys() async throws -> [StoredSigningKey] {
        try await rows("SELECT * FROM signing_keys ORDER BY created_at DESC, kid DESC").map { row in
            StoredSigningKey(
                kid: try row.string("kid"), algorithm: try row.string("algorithm"), privateKeyPEM: try row.string("private_key"),
                createdAt: try row.int64("created_at"), retiredAt: try row.optionalInt64("retired_at"))
        }
    }

    public func saveSigningKey(_ key: StoredSigningKey) async throws {
        try await execute(
            """
            INSERT INTO signing_keys (kid, algorithm, private_key, created_at, retired_at)
            VALUES (\(key.kid), \(key.algorithm), \(key.privateKeyPEM), \(key.createdAt), \(key.retiredAt))
            """)
    }

    public func retireSigningKeys(except kid: String, at: Int64) async throws {
        try await execute("UPDATE signing_keys SET retired_at = \(at) WHERE kid <> \(kid) AND retired_at IS NULL")
    }

    public func removeSigningKeys(retiredBefore before: Int64) async throws -> Int {
        try await rows("DELETE FROM signing_keys WHERE retired_at IS NOT NULL AND retired_at < \(before) RETURNING kid").count
    }

    public func saveOpenIDCode(hash: String, nonce: String?, authTime: Int64, expiresAt: Int64) async throws {
        try await execute("DELETE FROM openid_codes WHERE expires_at < \(Identifiers.nowMilliseconds())")
        try await execute(
            "INSERT INTO openid_codes (code_hash, nonce, auth_time, expires_at) VALUES (\(hash), \(nonce), \(authTime), \(expiresAt))"
        )
    }

    public func takeOpenIDCode(hash: String) async throws -> (nonce: String?, authTime: Int64)? {
        guard let row = try await rows("DELETE FROM openid_codes WHERE code_hash = \(hash) RETURNING nonce, auth_time").first
        else { return nil }
        return (try row.optionalString("nonce"), try row.int64("auth_time"))
    }

    public func saveOpenIDFamily(_ family: String, authTime: Int64, expiresAt: Int64) async throws {
        try await execute("DELETE FROM openid_families WHERE expires_at < \(Identifiers.nowMilliseconds())")
        try await execute(
            """
            INSERT INTO openid_families (family, auth_time, expires_at) VALUES (\(family), \(authTime), \(expiresAt))
            ON CONFLICT (family) DO UPDATE SET auth_time = EXCLUDED.auth_time, expires_at = EXCLUDED.expires_at
            """)
    }

    public func openIDFamilyAuthTime(_ family: String) async throws -> Int64? {
        try await rows("SELECT auth_time FROM openid_families WHERE family = \(family)").first?.int64("auth_time")
    }

    public func browserSessionExpiry(hash: String, now: Int64) async throws -> Int64? {
        try await rows("SELECT expires_at FROM browser_sessions WHERE hash = \(hash) AND expires_at > \(now)").first?.int64(
            "expires_at")
    }
}
