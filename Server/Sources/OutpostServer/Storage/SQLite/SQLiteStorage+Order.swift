import SQLiteNIO

extension SQLiteStorage {
    /// A page of a list ordered by fields (``RecordQuery/order``): `LIMIT limit` rows after (or
    /// before) `position`, or from `offset`.
    ///
    /// Each key becomes three columns of a subquery, `(rank, number, text)` as
    /// ``RecordOrderValue`` describes them, never `NULL`; the keyset condition compares them as
    /// row values, key after key. The JSON paths and the values are bound.
    func orderedSQL(
        _ query: RecordQuery, order: [RecordOrderKey], from position: RecordPosition?, backwards: Bool, limit: Int,
        offset: Int? = nil
    ) -> (sql: String, binds: [SQLiteData]) {
        var binds: [SQLiteData] = []
        var keyColumns = ""
        for (index, key) in order.enumerated() {
            let (rank, number, text) = Self.orderColumns(key.source, binds: &binds)
            keyColumns += ", \(rank) AS k\(index)r, \(number) AS k\(index)n, \(text) AS k\(index)t"
        }
        var sql = "SELECT \(Self.columns) FROM (SELECT \(Self.columns)\(keyColumns) FROM records WHERE type = ?"
        binds.append(.text(query.type))
        appendConditions(query, to: &sql, binds: &binds)
        sql += ")"
        if let values = position?.values, values.count == order.count {
            sql += " WHERE "
            sql += RecordOrderKey.SQL.keyset(order, after: values, backwards: backwards) { value in
                binds += [.integer(value.rank), .float(value.number), .text(value.text)]
                return "(?, ?, ?)"
            }
        }
        sql += " ORDER BY " + RecordOrderKey.SQL.orderBy(order, backwards: backwards)
        // Written into the SQL, as for the other lists: at most 101 texts per shape.
        sql += " LIMIT \(limit)"
        if let offset {
            sql += " OFFSET ?"
            binds.append(.integer(offset))
        }
        return (sql, binds)
    }

    /// The three SQL expressions of a key: rank, number (REAL) and text.
    private static func orderColumns(_ source: RecordOrderKey.Source, binds: inout [SQLiteData])
        -> (String, String, String)
    {
        switch source {
        case .created: return ("2", "CAST(created_at AS REAL)", "''")
        case .updated: return ("2", "CAST(updated_at AS REAL)", "''")
        case .id: return ("3", "0.0", "id")
        case .field(let name):
            let path = SQLiteData.text("$.\"\(name)\"")
            binds += [path, path, path, path, path, path]
            return (
                "CASE json_type(body, ?) WHEN 'true' THEN 1 WHEN 'false' THEN 1 WHEN 'integer' THEN 2 WHEN 'real' THEN 2 "
                    + "WHEN 'text' THEN 3 WHEN 'array' THEN 4 WHEN 'object' THEN 4 ELSE 0 END",
                "CASE json_type(body, ?) WHEN 'true' THEN 1.0 WHEN 'integer' THEN CAST(json_extract(body, ?) AS REAL) "
                    + "WHEN 'real' THEN CAST(json_extract(body, ?) AS REAL) ELSE 0.0 END",
                "CASE json_type(body, ?) WHEN 'text' THEN substr(json_extract(body, ?), 1, \(RecordOrderValue.textPrefix)) "
                    + "ELSE '' END"
            )
        }
    }
}
