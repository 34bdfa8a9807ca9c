import PostgresNIO

extension PostgresStorage {
    /// Two statements, as `outpost_changes` runs them: the watermark first (it waits for every
    /// writer that drew a smaller position), then, in a later snapshot, the changes up to it.
    public func latestChanges(type: String?, before position: Int64, limit: Int) async throws -> [RecordChange] {
        let watermark = try await rows("SELECT outpost_change_watermark() AS watermark").first?.optionalInt64("watermark") ?? 0
        let below = min(position, watermark == Int64.max ? watermark : watermark + 1)
        let limit = Int64(max(0, limit))
        if let type {
            return try await rows(
                """
                SELECT \(unescaped: Self.changeColumns) FROM record_changes
                WHERE type = \(type) AND position < \(below) ORDER BY position DESC LIMIT \(limit)
                """
            ).map(Self.change(from:))
        }
        return try await rows(
            """
            SELECT \(unescaped: Self.changeColumns) FROM record_changes
            WHERE position < \(below) ORDER BY position DESC LIMIT \(limit)
            """
        ).map(Self.change(from:))
    }
}
