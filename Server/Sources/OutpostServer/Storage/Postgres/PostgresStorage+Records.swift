public import Foundation
@_spi(OutpostInternal) public import OutpostCore
import PostgresNIO

extension PostgresStorage {
    static let columns = "seq, type, id, owner, body, version, created_at, updated_at, private"

    public func createRecord(type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool) async throws
        -> StoredRecord
    {
        // One statement in autocommit on a pooled connection: no transaction needed.
        return try await translatingErrors {
            try await client.withConnection { connection in
                try await Self.insertRecord(
                    type: type, fields: fields, owner: owner, isPrivate: isPrivate, now: Identifiers.nowMilliseconds(),
                    on: connection)
            }
        }
    }

    /// Inserts a record with a fresh id on `connection` (inside the caller's transaction, if any):
    /// an id collision inserts nothing (`ON CONFLICT DO NOTHING`, which leaves a transaction
    /// usable) and a new id is drawn.
    static func insertRecord(
        type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool, now: Int64,
        on connection: PostgresConnection
    ) async throws -> StoredRecord {
        let body = try RecordBodyText.text(fields)
        for _ in 0..<5 {
            let id = Identifiers.random()
            let rows = try await Self.rows(
                InsertRecord(type: type, id: id, owner: owner, body: body, now: now, isPrivate: isPrivate), on: connection)
            if let record = rows.first { return record }
        }
        throw idExhausted
    }

    /// Five ids drawn in a row were all taken.
    static let idExhausted = ServerError(
        .internalServerError, code: "id_exhausted", message: "Could not draw a free record id; try again")

    public func record(type: String, id: String) async throws -> StoredRecord? {
        return try await rows(RecordByID(type: type, id: id)).first
    }

    public func replaceRecord(type: String, id: String, fields: [String: JSONValue], expectedVersion: Int?) async throws
        -> StoredRecord
    {
        var statement = PostgresStatement("UPDATE records SET body = ")
        statement.sql += statement.bind(try RecordBodyText.text(fields))
        statement.sql += ", version = version + 1, updated_at = " + statement.bind(Identifiers.nowMilliseconds())
        statement.sql += " WHERE type = " + statement.bind(type) + " AND id = " + statement.bind(id)
        if let expectedVersion { statement.sql += " AND version = " + statement.bind(Int64(expectedVersion)) }
        statement.sql += " RETURNING \(Self.columns)"
        if let row = try await rows(statement.query).first { return try Self.record(from: row) }
        guard let current = try await record(type: type, id: id) else { throw RecordWriteFailure.notFound }
        throw RecordWriteFailure.versionMismatch(current: current.version)
    }

    public func updateRecord(
        type: String, id: String, expectedVersion: Int?,
        _ change: @Sendable (StoredRecord) throws -> [String: JSONValue]
    ) async throws -> StoredRecord {
        // FOR UPDATE holds the row until commit: a concurrent patch on any instance waits here and
        // then reads the version this one wrote.
        try await withTransaction { connection in
            guard
                let row = try await Self.rows(
                    "SELECT \(unescaped: Self.columns) FROM records WHERE type = \(type) AND id = \(id) FOR UPDATE",
                    on: connection
                ).first
            else { throw RecordWriteFailure.notFound }
            let current = try Self.record(from: row)
            if let expectedVersion, expectedVersion != current.version {
                throw RecordWriteFailure.versionMismatch(current: current.version)
            }
            let body = try RecordBodyText.text(try change(current))
            let now = Identifiers.nowMilliseconds()
            guard
                let written = try await Self.rows(
                    """
                    UPDATE records SET body = \(body), version = version + 1, updated_at = \(now)
                    WHERE seq = \(current.seq) RETURNING \(unescaped: Self.columns)
                    """, on: connection
                ).first
            else { throw RecordWriteFailure.notFound }
            return try Self.record(from: written)
        }
    }

    public func deleteRecord(type: String, id: String, expectedVersion: Int?) async throws {
        var statement = PostgresStatement("DELETE FROM records WHERE type = ")
        statement.sql += statement.bind(type) + " AND id = " + statement.bind(id)
        if let expectedVersion { statement.sql += " AND version = " + statement.bind(Int64(expectedVersion)) }
        statement.sql += " RETURNING seq"
        if try await !rows(statement.query).isEmpty { return }
        guard let current = try await record(type: type, id: id) else { throw RecordWriteFailure.notFound }
        throw RecordWriteFailure.versionMismatch(current: current.version)
    }

    public func listRecords(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws -> [StoredRecord]
    {
        if let order = query.order {
            let statement = Self.orderedStatement(
                query, order: order, from: position, backwards: backwards, limit: query.limit + 1)
            return try await rows(statement.query).map(Self.record(from:))
        }
        let descending = query.sort.descending != backwards
        if query.filters.isEmpty && query.access == nil && query.filter == nil {
            return try await keysetPage(query, from: position, descending: descending)
        }
        return try await rows(Self.keysetStatement(query, from: position, descending: descending).query).map(Self.record(from:))
    }

    /// A page without filters, by the prepared statement of its order.
    func keysetPage(_ query: RecordQuery, from position: RecordPosition?, descending: Bool) async throws -> [StoredRecord] {
        let page = Self.keysetParameters(query, from: position, descending: descending)
        let (start, limit) = (page.start, page.limit)
        switch (page.order >= 2, descending) {
        case (false, false): return try await rows(KeysetPage<CreatedAscending>(query, from: start, limit: limit))
        case (false, true): return try await rows(KeysetPage<CreatedDescending>(query, from: start, limit: limit))
        case (true, false): return try await rows(KeysetPage<UpdatedAscending>(query, from: start, limit: limit))
        case (true, true): return try await rows(KeysetPage<UpdatedDescending>(query, from: start, limit: limit))
        }
    }

    /// The prepared keyset statement of a page without filters (its index in ``keysetOrders``), its
    /// start (the first page starts before every row: past the end of the order) and its limit
    /// (one more than the page, to tell whether another follows).
    static func keysetParameters(_ query: RecordQuery, from position: RecordPosition?, descending: Bool)
        -> (order: Int, start: RecordPosition, limit: Int64)
    {
        let start = position ?? (descending ? RecordPosition(time: .max, seq: .max) : RecordPosition(time: .min, seq: .min))
        let updated = query.sort.column == RecordSort.updated.column
        return (2 * (updated ? 1 : 0) + (descending ? 1 : 0), start, Int64(query.limit + 1))
    }

    /// A keyset page of any query (field filters included) as one statement built for it.
    static func keysetStatement(_ query: RecordQuery, from position: RecordPosition?, descending: Bool) -> PostgresStatement {
        let column = query.sort.column
        var statement = PostgresStatement("SELECT \(Self.columns) FROM records WHERE type = ")
        statement.sql += statement.bind(query.type)
        Self.appendConditions(query, to: &statement)
        if let position {
            statement.sql += " AND (\(column), seq) \(descending ? "<" : ">") ("
            statement.sql += statement.bind(position.time) + ", " + statement.bind(position.seq) + ")"
        }
        let direction = descending ? "DESC" : "ASC"
        statement.sql += " ORDER BY \(column) \(direction), seq \(direction) LIMIT " + statement.bind(Int64(query.limit + 1))
        return statement
    }

    public func listRecords(_ query: RecordQuery, page: Int) async throws -> (records: [StoredRecord], total: Int) {
        var count = PostgresStatement("SELECT COUNT(*)::BIGINT AS total FROM records WHERE type = ")
        count.sql += count.bind(query.type)
        Self.appendConditions(query, to: &count)
        let total = try await rows(count.query).first?.int64("total") ?? 0
        if let order = query.order {
            let statement = Self.orderedStatement(
                query, order: order, from: nil, backwards: false, limit: query.limit, offset: max(0, page - 1) * query.limit)
            return (try await rows(statement.query).map(Self.record(from:)), Int(total))
        }
        let direction = query.sort.descending ? "DESC" : "ASC"
        var select = PostgresStatement("SELECT \(Self.columns) FROM records WHERE type = ")
        select.sql += select.bind(query.type)
        Self.appendConditions(query, to: &select)
        select.sql += " ORDER BY \(query.sort.column) \(direction), seq \(direction) LIMIT " + select.bind(Int64(query.limit))
        select.sql += " OFFSET " + select.bind(Int64(max(0, page - 1) * query.limit))
        return (try await rows(select.query).map(Self.record(from:)), Int(total))
    }

    /// Visibility (private records of others are left out), the caller's filter and equality on top-level fields,
    /// compared as JSON values (`1` equals `1.0`, as in SQLite). Names and values are bound.
    static func appendConditions(_ query: RecordQuery, to statement: inout PostgresStatement) {
        if let access = query.access {
            appendPredicate(access, to: &statement)
        } else if let viewer = query.viewer {
            statement.sql += " AND (NOT private OR owner = " + statement.bind(viewer) + ")"
        } else {
            statement.sql += " AND NOT private"
        }
        if let filter = query.filter {
            appendPredicate(filter.leavingOutExactHints, to: &statement, comparesStrings: filter.comparesFieldStrings)
        }
        appendIndexHints(query.filter, to: &statement)
        for filter in query.filters {
            // `owner` and `private` compare the record's own columns (``RecordQuery/filters``).
            switch (filter.field, filter.value) {
            case ("owner", .string(let user)): statement.sql += " AND owner = " + statement.bind(user)
            case ("owner", .null): statement.sql += " AND owner IS NULL"
            case ("private", .bool(let flag)): statement.sql += " AND private = " + statement.bind(flag)
            case ("owner", _), ("private", _): statement.sql += " AND FALSE"
            default:
                statement.sql += " AND body_json -> " + statement.bind(filter.field)
                statement.sql += " = " + statement.bind(JSONText.value(filter.value)) + "::jsonb"
            }
        }
    }

    /// `AND predicate`, leaving out records with U+0000 in a string when it compares strings.
    private static func appendPredicate(
        _ predicate: RecordPredicate, to statement: inout PostgresStatement, comparesStrings: Bool? = nil
    ) {
        let sql = accessSQL(predicate, into: &statement)
        statement.sql += " AND " + sql
        if comparesStrings ?? predicate.comparesFieldStrings {
            // `< 1`, not `= 0`: the same rows, and the planner estimates an inequality as a third of
            // them rather than as a rare equality, so it still reads a declared index in order.
            statement.sql += " AND strpos(body, " + statement.bind(RecordPredicate.escapedNull) + "::text) < 1"
        }
    }

    public func secret(named name: String) async throws -> Data {
        try await execute(
            "INSERT INTO settings (key, value) VALUES (\(name), \(Identifiers.secretBytes())) ON CONFLICT (key) DO NOTHING")
        guard let row = try await rows("SELECT value FROM settings WHERE key = \(name)").first else {
            throw ServerError(.internalServerError, code: "secret_missing", message: "The setting '\(name)' could not be read")
        }
        return try row["value"].decode(Data.self)
    }

    /// A record from a row of ``columns``, read by position in that order.
    static func record<Row: Collection>(from row: Row) throws -> StoredRecord where Row.Element == PostgresCell {
        var cells = PostgresCells(row)
        let seq = try cells.next(Int64.self)
        return StoredRecord(
            type: try cells.next(String.self), id: try cells.next(String.self), owner: try cells.next(String?.self),
            body: try cells.next(String.self), version: Int(try cells.next(Int64.self)), createdAt: try cells.next(Int64.self),
            updatedAt: try cells.next(Int64.self), seq: seq, isPrivate: try cells.next(Bool.self))
    }
}
