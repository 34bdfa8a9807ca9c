package import OutpostServer
import PostgresNIO

extension Storage {
    /// Marks every access token expired, as time would, on either backend: for the tests and the
    /// benchmark of refresh behaviour, which cannot wait out a token's lifetime.
    package func expireAccessTokens() async throws {
        let statement = "UPDATE tokens SET expires_at = 0 WHERE kind = 'access'"
        if let sqlite = self as? SQLiteStorage {
            try await sqlite.execute(unsafeSQL: statement)
        } else if let postgres = self as? PostgresStorage {
            try await postgres.execute(PostgresQuery(unsafeSQL: statement))
        } else {
            throw UnsupportedStorage(storage: "\(type(of: self))")
        }
    }
}

/// A storage backend the testing helpers cannot reach into.
struct UnsupportedStorage: Error, CustomStringConvertible {
    var storage: String
    var description: String { "Expiring tokens needs SQLite or PostgreSQL storage, not \(storage)" }
}
