import PostgresNIO

extension PostgresStorage {
    public func replaceClientSecret(id: String, secretHash: String, revokeTokens: Bool) async throws -> Bool {
        try await withTransaction { connection in
            let replaced = try await Self.rows(
                "UPDATE oauth_clients SET secret_hash = \(secretHash) WHERE id = \(id) AND secret_hash IS NOT NULL RETURNING id",
                on: connection)
            if !replaced.isEmpty, revokeTokens {
                try await Self.execute(
                    "UPDATE tokens SET state = 'revoked' WHERE client_id = \(id)", on: connection)
            }
            return !replaced.isEmpty
        }
    }
}
