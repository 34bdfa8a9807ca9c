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
        query.sorted(try RecordRows.fetchAll(db, type: type).filter(query.matches))
    }
}
