extension Storage {
    /// Marks every access token expired, as time would, on either backend. For the demo and tests of
    /// refresh behaviour, which cannot wait out a token's lifetime.
    package func expireAccessTokensForTesting() async throws {
        if let sqlite = self as? SQLiteStorage {
            try await sqlite.expireAccessTokensForTesting()
        } else if let postgres = self as? PostgresStorage {
            try await postgres.expireAccessTokensForTesting()
        } else {
            throw ServerError(
                .internalServerError, code: "unsupported_storage", message: "Expiring tokens needs SQLite or PostgreSQL storage")
        }
    }
}
