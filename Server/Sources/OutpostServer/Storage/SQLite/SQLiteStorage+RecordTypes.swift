import SQLiteNIO

extension SQLiteStorage: RecordTypeStorage {
    public func recordTypes(after: String?, limit: Int) async throws -> [String] {
        guard limit > 0 else { return [] }
        return try await reader.query(
            RecordTypeQuery.sql(after: "?", limit: "?"), [.text(after ?? ""), .integer(limit)]
        ).compactMap { $0.column("type")?.string }
    }
}
