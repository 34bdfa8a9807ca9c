import PostgresNIO

extension PostgresFileStorage {
    /// One statement: the files and their chunks, or the files' owner, and the pending uploads.
    package func removeFiles(owner: String, transferringTo recipient: String?) async throws -> Int {
        let files: PostgresQuery =
            if let recipient {
                """
                WITH uploads AS (DELETE FROM file_uploads WHERE owner = \(owner) RETURNING blob),
                chunks AS (DELETE FROM file_chunks WHERE blob IN (SELECT blob FROM uploads)),
                moved AS (UPDATE files SET owner = \(recipient) WHERE owner = \(owner) RETURNING 1)
                SELECT count(*) AS count FROM moved
                """
            } else {
                """
                WITH uploads AS (DELETE FROM file_uploads WHERE owner = \(owner) RETURNING blob),
                gone AS (DELETE FROM files WHERE owner = \(owner) RETURNING blob),
                chunks AS (DELETE FROM file_chunks WHERE blob IN (SELECT blob FROM uploads UNION ALL SELECT blob FROM gone))
                SELECT count(*) AS count FROM gone
                """
            }
        return Int(try await storage.rows(files).first?["count"].decode(Int64.self) ?? 0)
    }
}
