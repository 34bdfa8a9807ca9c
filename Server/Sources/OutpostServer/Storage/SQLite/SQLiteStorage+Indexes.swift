import SQLiteNIO

extension SQLiteStorage {
    /// Migration 12: the declared indexes of record types (``RecordIndex``).
    static let indexesMigration: [String] = [
        """
        CREATE TABLE record_indexes (
            type TEXT NOT NULL,
            fields TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (type, fields)
        )
        """
    ]

    /// The three SQL expressions of a field's key, `(rank, number, text)` as ``RecordOrderValue``
    /// describes them. The JSON path is written into the SQL, so a declared index on the same
    /// text serves the query: `field` is a validated name (letters, digits, `_`, `-`), which
    /// cannot leave the quoted path.
    static func keyExpressions(_ field: String) -> (rank: String, number: String, text: String) {
        precondition(RecordIndex.isValidName(field), "field names are validated before they reach SQL")
        let path = "'$.\"\(field)\"'"
        let type = "json_type(body, \(path))"
        let number = "CAST(json_extract(body, \(path)) AS REAL)"
        let rank =
            "CASE \(type) WHEN 'true' THEN 1 WHEN 'false' THEN 1 WHEN 'integer' THEN 2 WHEN 'real' THEN 2 WHEN 'text' THEN 3 "
            + "WHEN 'array' THEN 4 WHEN 'object' THEN 4 ELSE 0 END"
        let text = "substr(json_extract(body, \(path)), 1, \(RecordOrderValue.textPrefix))"
        return (
            rank, "CASE \(type) WHEN 'true' THEN 1.0 WHEN 'integer' THEN \(number) WHEN 'real' THEN \(number) ELSE 0.0 END",
            "CASE \(type) WHEN 'text' THEN \(text) ELSE '' END"
        )
    }

    /// `CREATE INDEX` for `index`: the type, each field's key expressions, then `id`.
    static func createIndexSQL(_ index: RecordIndex) -> String {
        let columns = index.columns(key: keyExpressions, text: { $0 }, id: "id DESC")
        return "CREATE INDEX IF NOT EXISTS \(index.name) ON records (\(columns))"
    }

    /// ` AND …` conditions on the key expressions of the fields the filter tests at its top level
    /// (``RecordIndexHint``), which a declared index can seek on; the exact filter stays in the query.
    static func appendIndexHints(_ filter: RecordPredicate?, to sql: inout String, binds: inout [SQLiteData]) {
        guard let filter else { return }
        for (field, test) in filter.topLevelFieldTests {
            guard RecordIndex.isValidName(field), case .rank(let rank, let number, let text)? = RecordIndexHint(test) else {
                continue
            }
            let key = keyExpressions(field)
            sql += " AND (\(key.rank)) = \(rank)"
            if let number {
                sql += " AND (\(key.number)) \(number.op) ?"
                binds.append(.float(number.value))
            }
            if let text {
                sql += " AND (\(key.text)) \(text.op) ?"
                binds.append(.text(text.value))
            }
        }
    }

    public func recordIndexes(type: String?) async throws -> [RecordIndex] {
        var sql = "SELECT type, fields FROM record_indexes"
        var binds: [SQLiteData] = []
        if let type {
            sql += " WHERE type = ?"
            binds.append(.text(type))
        }
        return try await reader.query(sql + " ORDER BY type, fields", binds).map { row in
            RecordIndex(
                validated: row.column("type")?.string ?? "",
                fields: (row.column("fields")?.string ?? "").split(separator: ",").map(String.init))
        }
    }

    public func createRecordIndex(_ index: RecordIndex) async throws {
        let sql = Self.createIndexSQL(index)
        try await withTransaction { connection in
            _ = try await connection.query(sql, [])
            _ = try await connection.query(
                "INSERT OR IGNORE INTO record_indexes (type, fields, created_at) VALUES (?, ?, ?)",
                [.text(index.type), .text(index.fieldList), .integer(Int(Identifiers.nowMilliseconds()))])
        }
    }

    public func dropRecordIndex(_ index: RecordIndex) async throws -> Bool {
        try await withTransaction { connection in
            let rows = try await connection.query(
                "DELETE FROM record_indexes WHERE type = ? AND fields = ? RETURNING type",
                [.text(index.type), .text(index.fieldList)])
            _ = try await connection.query("DROP INDEX IF EXISTS \(index.name)", [])
            return !rows.isEmpty
        }
    }

    public func countRecords(_ query: RecordQuery, upTo limit: Int) async throws -> Int {
        var conditions = ""
        var binds: [SQLiteData] = [.text(query.type)]
        appendConditions(query.visibilityOnly, to: &conditions, binds: &binds)
        let rows = try await reader.query(
            "SELECT count(*) AS n FROM (SELECT 1 FROM records WHERE type = ?\(conditions) LIMIT ?)",
            binds + [.integer(limit)])
        return rows.first?.column("n")?.integer ?? 0
    }
}
