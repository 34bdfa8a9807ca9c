import Foundation
import SQLiteNIO

extension SQLiteStorage: UpstreamSessionStorage {
    /// Pending web sign-ins through upstream providers, and the sealed refresh tokens they issued.
    static let upstreamSessionsMigration: [String] = [
        """
        CREATE TABLE upstream_sign_ins (
            state_hash TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            nonce TEXT NOT NULL,
            code_verifier TEXT NOT NULL,
            binding_hash TEXT NOT NULL,
            request TEXT NOT NULL,
            expires_at INTEGER NOT NULL
        )
        """,
        """
        CREATE TABLE upstream_tokens (
            user_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            sealed TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (user_id, provider)
        )
        """,
    ]

    public func savePendingSignIn(stateHash: String, _ pending: PendingUpstreamSignIn, now: Int64) async throws {
        _ = try await connection.query("DELETE FROM upstream_sign_ins WHERE expires_at < ?", [.integer(Int(now))])
        _ = try await connection.query(
            """
            INSERT INTO upstream_sign_ins (state_hash, provider, nonce, code_verifier, binding_hash, request, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(stateHash), .text(pending.provider), .text(pending.nonce), .text(pending.codeVerifier),
                .text(pending.bindingHash), .text(pending.request), .integer(Int(pending.expiresAt)),
            ])
    }

    public func takePendingSignIn(stateHash: String) async throws -> PendingUpstreamSignIn? {
        try await connection.query("DELETE FROM upstream_sign_ins WHERE state_hash = ? RETURNING *", [.text(stateHash)])
            .first.map { row in
                PendingUpstreamSignIn(
                    provider: row.column("provider")?.string ?? "", nonce: row.column("nonce")?.string ?? "",
                    codeVerifier: row.column("code_verifier")?.string ?? "",
                    bindingHash: row.column("binding_hash")?.string ?? "", request: row.column("request")?.string ?? "",
                    expiresAt: Int64(row.column("expires_at")?.integer ?? 0))
            }
    }

    public func saveUpstreamToken(userID: String, provider: String, sealed: String, now: Int64) async throws {
        _ = try await connection.query(
            """
            INSERT INTO upstream_tokens (user_id, provider, sealed, created_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (user_id, provider) DO UPDATE SET sealed = excluded.sealed, created_at = excluded.created_at
            """,
            [.text(userID), .text(provider), .text(sealed), .integer(Int(now))])
    }

    public func upstreamTokens(userID: String) async throws -> [(provider: String, sealed: String)] {
        try await connection.query(
            "SELECT provider, sealed FROM upstream_tokens WHERE user_id = ? ORDER BY provider", [.text(userID)]
        ).map { ($0.column("provider")?.string ?? "", $0.column("sealed")?.string ?? "") }
    }

    public func removeUpstreamToken(userID: String, provider: String) async throws {
        _ = try await connection.query(
            "DELETE FROM upstream_tokens WHERE user_id = ? AND provider = ?", [.text(userID), .text(provider)])
    }
}
