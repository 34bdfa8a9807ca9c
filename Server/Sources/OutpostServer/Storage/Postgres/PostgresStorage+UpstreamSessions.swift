import Foundation
import PostgresNIO

extension PostgresStorage: UpstreamSessionStorage {
    /// Step 14: pending web sign-ins through upstream providers, and the sealed refresh tokens they issued.
    static let upstreamSessionsSchema: [String] = [
        """
        CREATE TABLE upstream_sign_ins (
            state_hash TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            nonce TEXT NOT NULL,
            code_verifier TEXT NOT NULL,
            binding_hash TEXT NOT NULL,
            request TEXT NOT NULL,
            expires_at BIGINT NOT NULL
        )
        """,
        """
        CREATE TABLE upstream_tokens (
            user_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            sealed TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (user_id, provider)
        )
        """,
    ]

    public func savePendingSignIn(stateHash: String, _ pending: PendingUpstreamSignIn, now: Int64) async throws {
        try await execute("DELETE FROM upstream_sign_ins WHERE expires_at < \(now)")
        try await execute(
            """
            INSERT INTO upstream_sign_ins (state_hash, provider, nonce, code_verifier, binding_hash, request, expires_at)
            VALUES (\(stateHash), \(pending.provider), \(pending.nonce), \(pending.codeVerifier), \(pending.bindingHash),
                \(pending.request), \(pending.expiresAt))
            """)
    }

    public func takePendingSignIn(stateHash: String) async throws -> PendingUpstreamSignIn? {
        guard let row = try await rows("DELETE FROM upstream_sign_ins WHERE state_hash = \(stateHash) RETURNING *").first
        else { return nil }
        return PendingUpstreamSignIn(
            provider: try row["provider"].decode(String.self), nonce: try row["nonce"].decode(String.self),
            codeVerifier: try row["code_verifier"].decode(String.self),
            bindingHash: try row["binding_hash"].decode(String.self), request: try row["request"].decode(String.self),
            expiresAt: try row["expires_at"].decode(Int64.self))
    }

    public func saveUpstreamToken(userID: String, provider: String, sealed: String, now: Int64) async throws {
        try await execute(
            """
            INSERT INTO upstream_tokens (user_id, provider, sealed, created_at) VALUES (\(userID), \(provider), \(sealed), \(now))
            ON CONFLICT (user_id, provider) DO UPDATE SET sealed = excluded.sealed, created_at = excluded.created_at
            """)
    }

    public func upstreamTokens(userID: String) async throws -> [(provider: String, sealed: String)] {
        try await rows("SELECT provider, sealed FROM upstream_tokens WHERE user_id = \(userID) ORDER BY provider").map {
            (try $0["provider"].decode(String.self), try $0["sealed"].decode(String.self))
        }
    }

    public func removeUpstreamToken(userID: String, provider: String) async throws {
        try await execute("DELETE FROM upstream_tokens WHERE user_id = \(userID) AND provider = \(provider)")
    }
}
