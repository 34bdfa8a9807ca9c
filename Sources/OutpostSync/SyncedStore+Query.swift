import GRDB

extension SyncedStore {
    /// The local records of `type` that `filter` selects, in `sort`'s order, with their state. No
    /// network.
    ///
    /// The filter and sort mean what they mean for `GET /records/{type}`: `filter` is an
    /// expression over `record` (the fields plus `id`), e.g. `record.views > 10`; `sort` is a
    /// comma list of up to 3 fields, `-` for descending, values ordered null < false < true <
    /// numbers < strings < arrays and objects, ties broken by id.
    ///
    /// - Parameters:
    ///   - type: the records' type.
    ///   - filter: the expression a record must make exactly `true`; `nil` selects all.
    ///   - sort: the order, e.g. `-views,title`; `nil` orders by id.
    /// - Returns: the records.
    /// - Throws: ``SyncError`` for a filter or sort that does not parse, or a database error.
    public func query(_ type: String, filter: String? = nil, sort: String? = nil) async throws -> [SyncedRecord] {
        try RecordNames.check(type: type)
        let query = try LocalQuery(filter: filter, sort: sort)
        return try await database.read { db in try Self.answer(query, type: type, in: db) }
    }

    /// The answer of ``query(_:filter:sort:)`` now and again each time a write changes the
    /// store's records (GRDB's `ValueObservation`); a write that leaves the answer as it was
    /// emits nothing.
    ///
    /// - Parameters:
    ///   - type: the records' type.
    ///   - filter: as for ``query(_:filter:sort:)``.
    ///   - sort: as for ``query(_:filter:sort:)``.
    /// - Returns: the answers; the sequence ends when its task is cancelled and throws on a database error.
    /// - Throws: ``SyncError`` for a filter or sort that does not parse.
    public nonisolated func observe(
        _ type: String, filter: String? = nil, sort: String? = nil
    ) throws -> AsyncThrowingStream<[SyncedRecord], any Error> {
        try RecordNames.check(type: type)
        let query = try LocalQuery(filter: filter, sort: sort)
        let answers = ValueObservation.tracking { db in try Self.answer(query, type: type, in: db) }
            .removeDuplicates()
            .values(in: database)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await answer in answers { continuation.yield(answer) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    static func answer(_ query: LocalQuery, type: String, in db: Database) throws -> [SyncedRecord] {
        // SQLite narrows the rows by the filter's simple terms (through a local index when one
        // fits); the evaluator decides each row read, so the answer is the evaluator's alone.
        let prefilter = LocalPrefilter(query.condition)
        let rows = try Row.fetchAll(
            db,
            sql: "SELECT type, id, fields, version, state, error FROM records WHERE type = ? AND state != 'deleted'"
                + prefilter.sql,
            arguments: [type] + prefilter.arguments)
        return query.sorted(try rows.map(RecordRows.record(from:)).filter(query.matches))
    }

    /// Indexes the local records of `type` on `fields`, so that queries whose filter compares
    /// those fields with literals (`record.views > 10 && record.tag == "a"`, `in`, `^=`) read only
    /// the rows that can match instead of every record of the type. The index stays in the
    /// store's file; creating it again does nothing.
    ///
    /// - Parameters:
    ///   - type: the records' type.
    ///   - fields: top-level field names (or `id`), at most 4; a query uses an index whose first
    ///     field it compares.
    /// - Throws: ``SyncError`` for an invalid type or field, or a database error.
    public func index(_ type: String, on fields: [String]) async throws {
        try RecordNames.check(type: type)
        guard (1...4).contains(fields.count), fields.allSatisfy(RecordNames.isValid) else {
            throw SyncError("An index takes 1 to 4 field names (letters, digits, '_' or '-'), e.g. [\"views\"]")
        }
        let name = "records:\(type):" + fields.joined(separator: ",")
        let columns = (["type"] + fields.map(LocalPrefilter.column)).joined(separator: ", ")
        try await database.write { db in
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS \"\(name)\" ON records (\(columns))")
        }
    }
}
