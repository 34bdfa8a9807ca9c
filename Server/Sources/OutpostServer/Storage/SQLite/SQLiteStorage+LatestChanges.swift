import SQLiteNIO

extension SQLiteStorage {
    public func latestChanges(type: String?, before position: Int64, limit: Int) async throws -> [RecordChange] {
        let columns = "position, type, record_id, change, version, owner, private, body, created_at, updated_at, at"
        let rows: [StatementRow]
        if let type {
            rows = try await reader.query(
                "SELECT \(columns) FROM record_changes WHERE type = ? AND position < ? ORDER BY position DESC LIMIT ?",
                [.text(type), .integer(Int(position)), .integer(max(0, limit))])
        } else {
            rows = try await reader.query(
                "SELECT \(columns) FROM record_changes WHERE position < ? ORDER BY position DESC LIMIT ?",
                [.integer(Int(position)), .integer(max(0, limit))])
        }
        return try rows.map(Self.change(from:))
    }
}
