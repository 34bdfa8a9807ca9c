public import Foundation
@_spi(OutpostInternal) public import OutpostCore
import SQLiteNIO

extension SQLiteStorage {
    static let columns = "seq, type, id, owner, body, version, created_at, updated_at, private"

    public func createRecord(type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool) async throws
        -> StoredRecord
    {
        try await insertRecord(
            type: type, fields: fields, owner: owner, isPrivate: isPrivate, now: Identifiers.nowMilliseconds(), on: connection)
    }

    /// Inserts a record with a fresh id on `connection` (inside a transaction when the caller opened one).
    func insertRecord(
        type: String, fields: [String: JSONValue], owner: String?, isPrivate: Bool, now: Int64,
        on connection: BusyBoundedConnection
    ) async throws -> StoredRecord {
        let body = try RecordBodyText.text(fields)
        for _ in 0..<5 {
            let id = Identifiers.random()
            do {
                let rows = try await connection.query(
                    "INSERT INTO records (type, id, owner, body, version, created_at, updated_at, private) VALUES (?, ?, ?, ?, 1, ?, ?, ?) RETURNING \(Self.columns)",
                    [
                        .text(type), .text(id), owner.map(SQLiteData.text) ?? .null, .text(body), .integer(Int(now)),
                        .integer(Int(now)), .integer(isPrivate ? 1 : 0),
                    ])
                if let row = rows.first { return try Self.record(from: row) }
            } catch let error as SQLiteFailure where error.isUniqueConstraint {
                continue  // an identifier collision: draw again
            }
        }
        throw ServerError(.internalServerError, code: "id_exhausted", message: "Could not draw a free record id; try again")
    }

    /// Inserts many records in one transaction (for seeding and benchmarks).
    public func createRecords(type: String, bodies: [[String: JSONValue]], owner: String? = nil) async throws {
        try await withTransaction { connection in
            var now = Identifiers.nowMilliseconds()
            for fields in bodies {
                now += 1
                _ = try await connection.query(
                    "INSERT INTO records (type, id, owner, body, version, created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?)",
                    [
                        .text(type), .text(Identifiers.random()), owner.map(SQLiteData.text) ?? .null,
                        .text(try RecordBodyText.text(fields)), .integer(Int(now)), .integer(Int(now)),
                    ])
            }
        }
    }

    public func updateRecord(
        type: String, id: String, expectedVersion: Int?,
        _ change: @Sendable (StoredRecord) throws -> [String: JSONValue]
    ) async throws -> StoredRecord {
        // BEGIN IMMEDIATE takes the write lock first, so nobody changes the record between the read
        // and the write, in this process or another on the same file.
        try await withTransaction { connection in
            let rows = try await connection.query(
                "SELECT \(Self.columns) FROM records WHERE type = ? AND id = ?", [.text(type), .text(id)])
            guard let row = rows.first else { throw RecordWriteFailure.notFound }
            let current = try Self.record(from: row)
            if let expectedVersion, expectedVersion != current.version {
                throw RecordWriteFailure.versionMismatch(current: current.version)
            }
            let fields = try change(current)
            let updated = try await connection.query(
                "UPDATE records SET body = ?, version = version + 1, updated_at = ? WHERE seq = ? RETURNING \(Self.columns)",
                [
                    .text(try RecordBodyText.text(fields)), .integer(Int(Identifiers.nowMilliseconds())),
                    .integer(Int(current.seq)),
                ])
            guard let written = updated.first else { throw RecordWriteFailure.notFound }
            return try Self.record(from: written)
        }
    }

    public func record(type: String, id: String) async throws -> StoredRecord? {
        // A key lookup on every record GET: read in place (see pointRead).
        try await pointRead("SELECT \(Self.columns) FROM records WHERE type = ? AND id = ?", [.text(type), .text(id)]) { rows in
            guard try rows.next() else { return nil }
            return Self.record(from: rows)
        }
    }

    /// Replaces the fields when the record exists and, if `expectedVersion` is given, still has it.
    public func replaceRecord(type: String, id: String, fields: [String: JSONValue], expectedVersion: Int?) async throws
        -> StoredRecord
    {
        var sql = "UPDATE records SET body = ?, version = version + 1, updated_at = ? WHERE type = ? AND id = ?"
        var binds: [SQLiteData] = [
            .text(try RecordBodyText.text(fields)), .integer(Int(Identifiers.nowMilliseconds())), .text(type), .text(id),
        ]
        if let expectedVersion {
            sql += " AND version = ?"
            binds.append(.integer(expectedVersion))
        }
        let rows = try await connection.query(sql + " RETURNING \(Self.columns)", binds)
        if let row = rows.first { return try Self.record(from: row) }
        guard let current = try await record(type: type, id: id) else { throw RecordWriteFailure.notFound }
        throw RecordWriteFailure.versionMismatch(current: current.version)
    }

    public func deleteRecord(type: String, id: String, expectedVersion: Int?) async throws {
        var sql = "DELETE FROM records WHERE type = ? AND id = ?"
        var binds: [SQLiteData] = [.text(type), .text(id)]
        if let expectedVersion {
            sql += " AND version = ?"
            binds.append(.integer(expectedVersion))
        }
        let rows = try await connection.query(sql + " RETURNING seq", binds)
        if !rows.isEmpty { return }
        guard let current = try await record(type: type, id: id) else { throw RecordWriteFailure.notFound }
        throw RecordWriteFailure.versionMismatch(current: current.version)
    }

    /// One keyset page: up to `query.limit + 1` records after (or before) `position`, in the query's
    /// order. The extra record tells whether another page follows.
    public func listRecords(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws -> [StoredRecord]
    {
        if let order = query.order {
            let (sql, binds) = orderedSQL(query, order: order, from: position, backwards: backwards, limit: query.limit + 1)
            return try await reader.query(sql, binds).map(Self.record(from:))
        }
        let (sql, binds) = keysetSQL(query, from: position, backwards: backwards, columns: Self.columns)
        return try await reader.query(sql, binds).map(Self.record(from:))
    }

    /// The same page, written straight from the rows into the page's text: no ``StoredRecord``s,
    /// no row values copied into `SQLiteData`.
    ///
    /// When a read-only connection is free the page is read in place on the caller's thread,
    /// like a key read (`pointRead`), which spares a trip to the connection's thread and
    /// back (two thread switches, about a tenth of a page's CPU). A page may skip rows (private records
    /// of others, records a filter leaves out), so the in-place read is bounded: it walks at most
    /// `inPlaceRowBudget(limit:)` rows of the index, with the visibility and the filters
    /// evaluated as a column instead of in `WHERE`. A page it could not finish within them (too
    /// many rows skipped), a statement that meets another process's lock, or readers all in use
    /// take the way through a reader's thread, which runs the page's own query without a bound
    /// and waits for locks without holding the caller's thread.
    public func listRecordText(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws
        -> RecordPageText
    {
        let limit = query.limit
        if query.order != nil {
            let rows = try await listRecords(query, from: position, backwards: backwards)
            return RecordPageText(rows: rows, limit: limit, backwards: backwards, maxBytes: query.maxBytes)
        }
        let bounded = keysetSQL(
            query, from: position, backwards: backwards, columns: Self.pageColumns, shownAsColumn: true,
            rowLimit: Self.inPlaceRowBudget(limit: limit))
        let first = nextReader.add(1, ordering: .relaxed).oldValue
        let attempt = try readInPlace(bounded.sql, bounded.binds, startingAt: first) { rows in
            try Self.pageText(
                &rows, limit: limit, backwards: backwards, budget: Self.inPlaceRowBudget(limit: limit), maxBytes: query.maxBytes)
        }
        if let attempt, let page = attempt { return page }
        let (sql, binds) = keysetSQL(query, from: position, backwards: backwards, columns: Self.pageColumns)
        return try await readers[first % readers.count].read(sql, binds) { rows in
            // Without a budget the page is always complete.
            try Self.pageText(&rows, limit: limit, backwards: backwards, budget: nil, maxBytes: query.maxBytes)
                ?? RecordPageText(records: [])
        }
    }

    /// The columns a page's text is written from, in ``pageText(_:limit:backwards:budget:)``'s order.
    static let pageColumns = "seq, id, body, version, created_at, updated_at"

    /// How many rows of the index a list page read in place may walk: the page, the row that
    /// tells whether another follows, and up to 64 skipped rows (private records of others,
    /// records a filter leaves out). Beyond them the page goes to a reader's thread.
    static func inPlaceRowBudget(limit: Int) -> Int { limit + 1 + 64 }

    /// Writes one page from `rows` (``pageColumns``, then, with a `budget`, whether the row is
    /// shown: the visibility and filters as a column, the statement limited to `budget` rows).
    /// `nil` when the budget ran out before the page was complete. The page ends before a record
    /// that would take its text past `maxBytes` (``RecordQuery/maxBytes``).
    static func pageText(
        _ rows: inout RowReader, limit: Int, backwards: Bool, budget: Int?, maxBytes: Int = .max
    ) throws -> RecordPageText? {
        var text: [UInt8] = []
        text.reserveCapacity(limit * 192)
        var keys = RecordPageText.Keys(capacity: limit)
        // Backwards, rows come last-first: each record's bytes are noted and put in order after.
        var ranges: [Range<Int>] = []
        var more = false
        var walked = 0
        while try rows.next() {
            walked += 1
            if budget != nil, rows.integer(6) == 0 { continue }  // not shown to this viewer, or filtered out
            if keys.positions.count == limit {
                more = true
                break
            }
            if !backwards && !keys.positions.isEmpty { text.append(UInt8(ascii: ",")) }
            let start = text.count
            let created = rows.integer(4)
            let updated = rows.integer(5)
            let version = Int(rows.integer(3))
            let seq = rows.integer(0)
            rows.withText(1) { id in
                keys.append(id: id, version: version, createdAt: created, updatedAt: updated, seq: seq)
            }
            // The id's bytes again from the keys (a column's text is not held across another column's).
            let idBytes = keys.idBytes(keys.positions.count - 1)
            rows.withText(2) { body in
                WireText.append(id: idBytes, createdAt: created, updatedAt: updated, body: body, to: &text)
            }
            ranges.append(start..<text.count)
            // Past the byte bound: this record starts the next page (a page keeps at least one).
            // (Backwards, the commas come when the records are put in order.)
            if text.count + (backwards ? keys.positions.count - 1 : 0) > maxBytes, keys.positions.count > 1 {
                text.removeSubrange((backwards ? start : start - 1)...)
                keys.removeLast()
                ranges.removeLast()
                more = true
                break
            }
        }
        // The statement stopped at its row limit: rows beyond it were not looked at.
        if let budget, !more, walked == budget { return nil }
        if backwards {
            var ordered: [UInt8] = []
            ordered.reserveCapacity(text.count + ranges.count)
            for (offset, range) in ranges.reversed().enumerated() {
                if offset > 0 { ordered.append(UInt8(ascii: ",")) }
                ordered.append(contentsOf: text[range])
            }
            text = ordered
            keys = keys.inReverse()
        }
        return RecordPageText(text: text, keys: keys, more: more)
    }

    /// The keyset query of one page (`limit + 1` rows) selecting `columns`.
    ///
    /// With `shownAsColumn`, the visibility and the filters are not in `WHERE` but a last column
    /// (1 when the row belongs on the page), and the statement stops after `rowLimit` rows: a
    /// page read that skips rows walks a bounded part of the index.
    func keysetSQL(
        _ query: RecordQuery, from position: RecordPosition?, backwards: Bool, columns: String, shownAsColumn: Bool = false,
        rowLimit: Int? = nil
    ) -> (sql: String, binds: [SQLiteData]) {
        let column = query.sort.column
        // Walking backwards reverses the order; the caller flips the rows back.
        let descending = query.sort.descending != backwards
        var conditions = ""
        var binds: [SQLiteData] = []
        appendConditions(query, to: &conditions, binds: &binds)
        var sql: String
        if shownAsColumn {
            // " AND a AND b" as a column: "(1 AND a AND b)". Its parameters come first.
            sql = "SELECT \(columns), (1\(conditions)) FROM records WHERE type = ?"
            binds.append(.text(query.type))
        } else {
            sql = "SELECT \(columns) FROM records WHERE type = ?\(conditions)"
            binds.insert(.text(query.type), at: 0)
        }
        if let position {
            sql += " AND (\(column), seq) \(descending ? "<" : ">") (?, ?)"
            binds += [.integer(Int(position.time)), .integer(Int(position.seq))]
        }
        // The limit is written into the SQL, not bound: SQLite reads a bound LIMIT while planning
        // and marks the statement to be prepared again whenever that parameter is bound, which
        // made every kept list statement re-prepare on every page. An integer cannot inject
        // anything, and the route allows 1 to 100 (so at most 100 texts per list shape).
        sql +=
            " ORDER BY \(column) \(descending ? "DESC" : "ASC"), seq \(descending ? "DESC" : "ASC") LIMIT \(rowLimit ?? query.limit + 1)"
        return (sql, binds)
    }

    /// One page by number (legacy): the records and the total count.
    public func listRecords(_ query: RecordQuery, page: Int) async throws -> (records: [StoredRecord], total: Int) {
        let column = query.sort.column
        let direction = query.sort.descending ? "DESC" : "ASC"
        var filterSQL = ""
        var binds: [SQLiteData] = [.text(query.type)]
        appendConditions(query, to: &filterSQL, binds: &binds)
        let reader = self.reader
        let countRows = try await reader.query("SELECT COUNT(*) AS total FROM records WHERE type = ?" + filterSQL, binds)
        let total = countRows.first?.column("total")?.integer ?? 0
        if let order = query.order {
            let (sql, orderBinds) = orderedSQL(
                query, order: order, from: nil, backwards: false, limit: query.limit, offset: (page - 1) * query.limit)
            return (try await reader.query(sql, orderBinds).map(Self.record(from:)), total)
        }
        let rows = try await reader.query(
            "SELECT \(Self.columns) FROM records WHERE type = ?\(filterSQL) ORDER BY \(column) \(direction), seq \(direction) LIMIT ? OFFSET ?",
            binds + [.integer(query.limit), .integer((page - 1) * query.limit)])
        return (try rows.map(Self.record(from:)), total)
    }

    /// Every condition of a list: visibility, the caller's filter, equality filters.
    func appendConditions(_ query: RecordQuery, to sql: inout String, binds: inout [SQLiteData]) {
        appendVisibility(query, to: &sql, binds: &binds)
        appendFilters(query.filters, to: &sql, binds: &binds)
    }

    /// The records the access rules let the caller list (``RecordQuery/access``); without rules,
    /// private records of others are left out and `viewer` sees its own. Then the caller's own
    /// filter (``RecordQuery/filter``).
    private func appendVisibility(_ query: RecordQuery, to sql: inout String, binds: inout [SQLiteData]) {
        if let access = query.access {
            appendPredicate(access, to: &sql, binds: &binds)
        } else if let viewer = query.viewer {
            sql += " AND (private = 0 OR owner = ?)"
            binds.append(.text(viewer))
        } else {
            sql += " AND private = 0"
        }
        if let filter = query.filter {
            appendPredicate(filter.leavingOutExactHints, to: &sql, binds: &binds, comparesStrings: filter.comparesFieldStrings)
        }
        Self.appendIndexHints(query.filter, to: &sql, binds: &binds)
    }

    /// `AND predicate`, leaving out records with U+0000 in a string when it compares strings.
    private func appendPredicate(
        _ predicate: RecordPredicate, to sql: inout String, binds: inout [SQLiteData], comparesStrings: Bool? = nil
    ) {
        sql += " AND " + Self.accessSQL(predicate, binds: &binds)
        if comparesStrings ?? predicate.comparesFieldStrings {
            sql += " AND instr(body, ?) = 0"
            binds.append(.text(RecordPredicate.escapedNull))
        }
    }

    /// Equality on top-level fields. The JSON path and the value are bound, never spliced.
    /// `owner` and `private` compare the record's owner and visibility (``RecordQuery/filters``).
    private func appendFilters(_ filters: [(field: String, value: JSONValue)], to sql: inout String, binds: inout [SQLiteData]) {
        for filter in filters {
            switch (filter.field, filter.value) {
            case ("owner", .string(let user)):
                sql += " AND owner = ?"
                binds.append(.text(user))
                continue
            case ("owner", .null):
                sql += " AND owner IS NULL"
                continue
            case ("private", .bool(let flag)):
                sql += " AND private = ?"
                binds.append(.integer(flag ? 1 : 0))
                continue
            case ("owner", _), ("private", _):
                sql += " AND 0"
                continue
            default: break
            }
            switch filter.value {
            case .null:
                sql += " AND json_type(body, ?) = 'null'"
                binds.append(.text("$.\"\(filter.field)\""))
            case .bool(let flag):
                sql += " AND json_type(body, ?) = ?"
                binds += [.text("$.\"\(filter.field)\""), .text(flag ? "true" : "false")]
            case .int(let number):
                sql += " AND json_extract(body, ?) = ?"
                binds += [.text("$.\"\(filter.field)\""), .integer(number)]
            case .double(let number):
                sql += " AND json_extract(body, ?) = ?"
                binds += [.text("$.\"\(filter.field)\""), .float(number)]
            case .largeInteger(let digits):
                // SQLite reads integers beyond 64 bits as REAL.
                sql += " AND json_extract(body, ?) = ?"
                binds += [.text("$.\"\(filter.field)\""), .float(Double(digits) ?? .nan)]
            case .string(let text):
                sql += " AND json_type(body, ?) = 'text' AND json_extract(body, ?) = ?"
                binds += [.text("$.\"\(filter.field)\""), .text("$.\"\(filter.field)\""), .text(text)]
            case .array, .object:
                sql += " AND json_extract(body, ?) = json(?)"
                binds += [.text("$.\"\(filter.field)\""), .text(filter.value.jsonString())]
            }
        }
    }

    /// A secret kept in the database, created on first use (e.g. the cursor-signing key).
    public func secret(named name: String) async throws -> Data {
        let fresh = Identifiers.secretBytes()
        _ = try await connection.query(
            "INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)", [.text(name), .blob(.init(bytes: fresh))])
        let rows = try await connection.query("SELECT value FROM settings WHERE key = ?", [.text(name)])
        guard let blob = rows.first?.column("value")?.blob else {
            throw ServerError(.internalServerError, code: "secret_missing", message: "The setting '\(name)' could not be read")
        }
        return Data(blob.readableBytesView)
    }

    /// The record in the current row of a statement selecting ``columns``, in their order.
    static func record(from row: RowReader) -> StoredRecord {
        StoredRecord(
            type: row.text(1), id: row.text(2), owner: row.isNull(3) ? nil : row.text(3), body: row.text(4),
            version: Int(row.integer(5)), createdAt: row.integer(6), updatedAt: row.integer(7), seq: row.integer(0),
            isPrivate: row.integer(8) != 0)
    }

    static func record(from row: StatementRow) throws -> StoredRecord {
        guard let seq = row.column("seq")?.integer, let type = row.column("type")?.string, let id = row.column("id")?.string,
            let body = row.column("body")?.string, let version = row.column("version")?.integer,
            let created = row.column("created_at")?.integer, let updated = row.column("updated_at")?.integer
        else {
            throw ServerError(.internalServerError, code: "corrupt_record", message: "A stored record is missing a column")
        }
        return StoredRecord(
            type: type, id: id, owner: row.column("owner")?.string, body: body, version: version,
            createdAt: Int64(created), updatedAt: Int64(updated), seq: Int64(seq),
            isPrivate: (row.column("private")?.integer ?? 0) != 0)
    }
}
