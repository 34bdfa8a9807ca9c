/// The server's storage boundary. SQLite is the embedded default; a PostgreSQL store implements
/// the same protocol to scale out.
public protocol Storage: Sendable {
    /// Creates or upgrades the schema. Safe to call on every start.
    func migrate() async throws
    /// Throws when the database cannot answer a trivial query.
    func checkHealth() async throws
    /// The schema version after ``migrate()``.
    func schemaVersion() async throws -> Int
    /// Closes connections. Nothing may be called afterwards.
    func close() async throws
}
