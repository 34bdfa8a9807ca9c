import PostgresNIO

extension PostgresStorage: RecordTypeStorage {
    public func recordTypes(after: String?, limit: Int) async throws -> [String] {
        guard limit > 0 else { return [] }
        var query = PostgresQuery(unsafeSQL: RecordTypeQuery.sql(after: "$1", limit: "$2"))
        query.binds.append(after ?? "")
        query.binds.append(Int64(limit))
        return try await rows(query).map { try $0.string("type") }
    }
}
