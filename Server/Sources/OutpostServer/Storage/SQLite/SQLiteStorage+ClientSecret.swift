import SQLiteNIO

extension SQLiteStorage {
    public func replaceClientSecret(id: String, secretHash: String, revokeTokens: Bool) async throws -> Bool {
        try await withTransaction { writer in
            let replaced = try await writer.query(
                "UPDATE oauth_clients SET secret_hash = ? WHERE id = ? AND secret_hash IS NOT NULL RETURNING id",
                [.text(secretHash), .text(id)])
            if !replaced.isEmpty, revokeTokens {
                _ = try await writer.query(
                    "UPDATE tokens SET state = 'revoked' WHERE client_id = ?", [.text(id)])
            }
            return !replaced.isEmpty
        }
    }
}
