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
            let (rank, number, text) = orderColumns(key.source, into: &statement)
            keyColumns += ", \(rank) AS k\(index)r, \(number) AS k\(index)n, (\(text)) COLLATE \"C\" AS k\(index)t"
        }
        statement.sql = "SELECT \(Self.columns) FROM (SELECT \(Self.columns)\(keyColumns) FROM records WHERE type = "
        statement.sql += statement.bind(query.type)
        appendConditions(query, to: &statement)
        statement.sql += ") AS ordered"
        if let values = position?.values, values.count == order.count {
            let condition = RecordOrderKey.SQL.keyset(order, after: values, backwards: backwards) { value in
                "(" + statement.bind(Int64(value.rank)) + "::int, " + statement.bind(value.number) + "::float8, "
                    + statement.bind(value.text) + "::text COLLATE \"C\")"
            }
            statement.sql += " WHERE " + condition
        }
        statement.sql += " ORDER BY " + RecordOrderKey.SQL.orderBy(order, backwards: backwards)
        statement.sql += " LIMIT " + statement.bind(Int64(limit))
        if let offset { statement.sql += " OFFSET " + statement.bind(Int64(offset)) }
        return statement
    }

    /// The three SQL expressions of a key: rank (int), number (float8) and text.
    private static func orderColumns(_ source: RecordOrderKey.Source, into statement: inout PostgresStatement)
        -> (String, String, String)
    {
        switch source {
        case .created: return ("2", "created_at::float8", "''::text")
        case .updated: return ("2", "updated_at::float8", "''::text")
        case .id: return ("3", "0::float8", "id::text")
        case .field(let name):
            let field = "(body_json -> " + statement.bind(name) + "::text)"
            return (
                "CASE jsonb_typeof(\(field)) WHEN 'boolean' THEN 1 WHEN 'number' THEN 2 WHEN 'string' THEN 3 "
                    + "WHEN 'array' THEN 4 WHEN 'object' THEN 4 ELSE 0 END",
                "CASE jsonb_typeof(\(field)) WHEN 'number' THEN (\(field) #>> '{}')::float8 "
                    + "WHEN 'boolean' THEN (CASE WHEN \(field) = 'true'::jsonb THEN 1 ELSE 0 END)::float8 ELSE 0::float8 END",
                "CASE WHEN jsonb_typeof(\(field)) = 'string' THEN substr(\(field) #>> '{}', 1, \(RecordOrderValue.textPrefix)) "
                    + "ELSE ''::text END"
            )
        }
    }
}
