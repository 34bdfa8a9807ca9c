import PostgresNIO

extension PostgresStorage {
    /// A page of a list ordered by fields (``RecordQuery/order``): `LIMIT limit` rows after (or
    /// before) `position`, or from `offset`.
    ///
    /// Each key becomes three columns of a subquery, `(rank, number, text)` as
    /// ``RecordOrderValue`` describes them, never `NULL`, texts in `COLLATE "C"` (code-point
    /// order, as SQLite's BINARY); the keyset condition compares them as row values, key after key.
    static func orderedStatement(
        _ query: RecordQuery, order: [RecordOrderKey], from position: RecordPosition?, backwards: Bool, limit: Int,
        offset: Int? = nil
    ) -> PostgresStatement {
        var statement = PostgresStatement("")
        var keyColumns = ""
        for (index, key) in order.enumerated() {
            let (rank, number, text) = orderColumns(key.source)
            keyColumns += ", \(rank) AS k\(index)r, \(number) AS k\(index)n, (\(text)) COLLATE \"C\" AS k\(index)t"
        }
        statement.sql = "SELECT \(Self.columns) FROM (SELECT \(Self.columns)\(keyColumns) FROM records WHERE type = "
        statement.sql += statement.bind(query.type)
        appendConditions(query, to: &statement)
        statement.sql += ") AS ordered"
        if let values = position?.values, values.count == order.count {
            let condition = RecordOrderKey.SQL.keyset(order, after: values, backwards: backwards, filter: query.filter) { part in
                switch part {
                case .rank(let rank): statement.bind(Int64(rank)) + "::int"
                case .number(let number): statement.bind(number) + "::float8"
                case .text(let text): statement.bind(text) + "::text COLLATE \"C\""
                }
            }
            statement.sql += " WHERE " + condition
        }
        statement.sql += " ORDER BY " + RecordOrderKey.SQL.orderBy(order, backwards: backwards, filter: query.filter)
        statement.sql += " LIMIT " + statement.bind(Int64(limit))
        if let offset { statement.sql += " OFFSET " + statement.bind(Int64(offset)) }
        return statement
    }

    /// The three SQL expressions of a key: rank (int), number (float8) and text.
    private static func orderColumns(_ source: RecordOrderKey.Source)
        -> (String, String, String)
    {
        switch source {
        case .created: return ("2", "created_at::float8", "''::text")
        case .updated: return ("2", "updated_at::float8", "''::text")
        case .id: return ("3", "0::float8", "id::text")
        case .field(let name):
            // The same expressions a declared index holds (``keyExpressions(_:)``).
            return keyExpressions(name)
        }
    }
}
