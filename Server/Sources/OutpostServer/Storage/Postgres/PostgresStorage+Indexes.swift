import PostgresNIO

extension PostgresStorage {
    /// Migration 7: the declared indexes of record types (SQLite's 12).
    static let indexesSchema: [String] = [
        """
        CREATE TABLE record_indexes (
            type TEXT NOT NULL,
            fields TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (type, fields)
        )
        """
    ]

    /// Serialises index builds and drops of every instance on the database (`pg_advisory_lock`).
    static let indexLock: Int64 = 0x6F75_7470_6F73_75

    /// The three SQL expressions of a field's key, `(rank, number, text)` as ``RecordOrderValue``
    /// describes them; the text before its `COLLATE "C"`. The field's name is written into the SQL,
    /// so a declared index on the same text serves the query: `field` is a validated name
    /// (letters, digits, `_`, `-`), which cannot leave the quoted literal.
    static func keyExpressions(_ field: String) -> (rank: String, number: String, text: String) {
        precondition(RecordIndex.isValidName(field), "field names are validated before they reach SQL")
        let value = "(body_json -> '\(field)'::text)"
        return (
            "CASE jsonb_typeof(\(value)) WHEN 'boolean' THEN 1 WHEN 'number' THEN 2 WHEN 'string' THEN 3 "
                + "WHEN 'array' THEN 4 WHEN 'object' THEN 4 ELSE 0 END",
            "CASE jsonb_typeof(\(value)) WHEN 'number' THEN (\(value) #>> '{}')::float8 "
                + "WHEN 'boolean' THEN (CASE WHEN \(value) = 'true'::jsonb THEN 1 ELSE 0 END)::float8 ELSE 0::float8 END",
            "CASE WHEN jsonb_typeof(\(value)) = 'string' THEN substr(\(value) #>> '{}', 1, \(RecordOrderValue.textPrefix)) "
                + "ELSE ''::text END"
        )
    }

    /// `CREATE INDEX CONCURRENTLY` for `index`: the type, each field's key expressions, then `id`,
    /// texts in `COLLATE "C"` as the list query orders them.
    static func createIndexSQL(_ index: RecordIndex) -> String {
        let columns = index.columns(key: keyExpressions, text: { "(\($0)) COLLATE \"C\"" }, id: "((id::text) COLLATE \"C\") DESC")
        return "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(index.name) ON records (\(columns))"
    }

    /// ` AND …` conditions on the key expressions of the fields the filter tests at its top level
    /// (``RecordIndexHint``), which a declared index can seek on; the exact filter stays in the query.
    static func appendIndexHints(_ filter: RecordPredicate?, to statement: inout PostgresStatement) {
        guard let filter else { return }
        for (field, test) in filter.topLevelFieldTests {
            guard RecordIndex.isValidName(field), case .rank(let rank, let number, let text)? = RecordIndexHint(test) else {
                continue
            }
            let key = keyExpressions(field)
            statement.sql += " AND (\(key.rank)) = \(rank)"
            if let number {
                statement.sql += " AND (\(key.number)) \(number.op) " + statement.bind(number.value) + "::float8"
            }
            if let text {
                statement.sql +=
                    " AND ((\(key.text)) COLLATE \"C\") \(text.op) " + statement.bind(text.value) + "::text COLLATE \"C\""
            }
        }
    }

    public func recordIndexes(type: String?) async throws -> [RecordIndex] {
        let found: [PostgresRandomAccessRow]
        if let type {
            found = try await rows("SELECT type, fields FROM record_indexes WHERE type = \(type) ORDER BY type, fields")
        } else {
            found = try await rows("SELECT type, fields FROM record_indexes ORDER BY type, fields")
        }
        return try found.map { row in
            RecordIndex(
                validated: try row.string("type"), fields: try row.string("fields").split(separator: ",").map(String.init))
        }
    }

    /// Builds the index without blocking writes (`CREATE INDEX CONCURRENTLY`, outside a
    /// transaction) while holding an advisory lock, so instances building at once take turns; an
    /// invalid index a failed build left behind is dropped and built again.
    public func createRecordIndex(_ index: RecordIndex) async throws {
        let create = Self.createIndexSQL(index)
        try await withIndexLock { connection in
            let invalid = try await Self.rows(
                "SELECT NOT indisvalid AS invalid FROM pg_index WHERE indexrelid = to_regclass(\(index.name))", on: connection)
            if try invalid.first?["invalid"].decode(Bool.self) == true {
                try await Self.execute(
                    PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(index.name)"), on: connection)
            }
            try await Self.execute(PostgresQuery(unsafeSQL: create), on: connection)
            let now = Identifiers.nowMilliseconds()
            try await Self.execute(
                """
                INSERT INTO record_indexes (type, fields, created_at) VALUES (\(index.type), \(index.fieldList), \(now))
                ON CONFLICT DO NOTHING
                """, on: connection)
        }
    }

    public func dropRecordIndex(_ index: RecordIndex) async throws -> Bool {
        try await withIndexLock { connection in
            let removed = try await Self.rows(
                "DELETE FROM record_indexes WHERE type = \(index.type) AND fields = \(index.fieldList) RETURNING type",
                on: connection)
            try await Self.execute(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(index.name)"), on: connection)
            return !removed.isEmpty
        }
    }

    public func countRecords(_ query: RecordQuery, upTo limit: Int) async throws -> Int {
        var statement = PostgresStatement("SELECT count(*)::BIGINT AS n FROM (SELECT 1 FROM records WHERE type = ")
        statement.sql += statement.bind(query.type)
        Self.appendConditions(query.visibilityOnly, to: &statement)
        statement.sql += " LIMIT " + statement.bind(Int64(limit)) + ") AS bounded"
        return Int(try await rows(statement.query).first?.int64("n") ?? 0)
    }

    /// Runs `body` on one connection outside a transaction, holding ``indexLock``.
    private func withIndexLock<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await translatingErrors {
            try await client.withConnection { connection in
                try await Self.execute("SELECT pg_advisory_lock(\(Self.indexLock))", on: connection)
                do {
                    let value = try await body(connection)
                    try await Self.execute("SELECT pg_advisory_unlock(\(Self.indexLock))", on: connection)
                    return value
                } catch {
                    try? await Self.execute("SELECT pg_advisory_unlock(\(Self.indexLock))", on: connection)
                    throw error
                }
            }
        }
    }
}
