import SQLiteNIO

extension SQLiteStorage {
    /// A page of a list ordered by fields (``RecordQuery/order``): `LIMIT limit` rows after (or
    /// before) `position`, or from `offset`.
    ///
    /// Each key becomes three columns of a subquery, `(rank, number, text)` as
    /// ``RecordOrderValue`` describes them, never `NULL`; the keyset condition compares them as
    /// row values, key after key. The values are bound; the JSON paths of validated field names are
    /// written into the SQL, so a declared index on the same expressions serves the order.
    func orderedSQL(
        _ query: RecordQuery, order: [RecordOrderKey], from position: RecordPosition?, backwards: Bool, limit: Int,
        offset: Int? = nil
    ) -> (sql: String, binds: [SQLiteData]) {
        var binds: [SQLiteData] = []
        var keyColumns = ""
        for (index, key) in order.enumerated() {
            let (rank, number, text) = Self.orderColumns(key.source)
            keyColumns += ", \(rank) AS k\(index)r, \(number) AS k\(index)n, \(text) AS k\(index)t"
        }
        var sql = "SELECT \(Self.columns) FROM (SELECT \(Self.columns)\(keyColumns) FROM records WHERE type = ?"
        binds.append(.text(query.type))
        appendConditions(query, to: &sql, binds: &binds)
        sql += ")"
        if let values = position?.values, values.count == order.count {
            sql += " WHERE "
            sql += RecordOrderKey.SQL.keyset(order, after: values, backwards: backwards, filter: query.filter) { part in
                switch part {
                case .rank(let rank): binds.append(.integer(rank))
                case .number(let number): binds.append(.float(number))
                case .text(let text): binds.append(.text(text))
                }
                return "?"
            }
        }
        sql += " ORDER BY " + RecordOrderKey.SQL.orderBy(order, backwards: backwards, filter: query.filter)
        // Written into the SQL, as for the other lists: at most 101 texts per shape.
        sql += " LIMIT \(limit)"
        if let offset {
            sql += " OFFSET ?"
            binds.append(.integer(offset))
        }
        return (sql, binds)
    }

    /// The three SQL expressions of a key: rank, number (REAL) and text.
    private static func orderColumns(_ source: RecordOrderKey.Source)
        -> (String, String, String)
    {
        switch source {
        case .created: return ("2", "CAST(created_at AS REAL)", "''")
        case .updated: return ("2", "CAST(updated_at AS REAL)", "''")
        case .id: return ("3", "0.0", "id")
        case .field(let name):
            // The same expressions a declared index holds (``keyExpressions(_:)``).
            return keyExpressions(name)
        }
    }
}
