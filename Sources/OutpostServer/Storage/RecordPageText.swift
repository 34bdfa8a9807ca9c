/// One keyset page of records as the list route answers them: the records' wire text (what
/// ``StoredRecord/wireText`` gives for each, joined by commas, in page order) and, per record, what
/// the page's cursors and ETag need. A backend may write it straight from its rows, without
/// building ``StoredRecord``s first (SQLite does, on the connection's thread); any other gets it
/// from ``RecordStorage/listRecords(_:from:backwards:)`` through the default implementation.
public struct RecordPageText: Sendable, Equatable {
    /// What the list route needs of one record besides its text.
    public struct Entry: Sendable, Hashable {
        public var id: String
        public var version: Int
        public var createdAt: Int64
        public var updatedAt: Int64
        public var seq: Int64

        public init(id: String, version: Int, createdAt: Int64, updatedAt: Int64, seq: Int64) {
            self.id = id
            self.version = version
            self.createdAt = createdAt
            self.updatedAt = updatedAt
            self.seq = seq
        }

        init(_ record: StoredRecord) {
            self.init(
                id: record.id, version: record.version, createdAt: record.createdAt, updatedAt: record.updatedAt, seq: record.seq)
        }
    }

    /// The records' wire text, UTF-8, joined by commas, without the enclosing brackets.
    public var text: [UInt8]
    /// The page's records, in page order (at most the query's `limit`).
    public var records: [Entry]
    /// Whether the query found a record beyond the page (in the direction it walked).
    public var more: Bool

    public init(text: [UInt8], records: [Entry], more: Bool) {
        self.text = text
        self.records = records
        self.more = more
    }

    /// The page of `rows` as ``RecordStorage/listRecords(_:from:backwards:)`` returns them: up to
    /// `limit + 1` records in the order walked (reversed when `backwards`).
    public init(rows: [StoredRecord], limit: Int, backwards: Bool) {
        var rows = rows
        let more = rows.count > limit
        if more { rows.removeLast(rows.count - limit) }
        if backwards { rows.reverse() }
        self.init(records: rows)
        self.more = more
    }

    /// The page of exactly these records, in this order (`more` is `false`).
    public init(records rows: [StoredRecord]) {
        var text: [UInt8] = []
        text.reserveCapacity(rows.reduce(0) { $0 + $1.body.utf8.count + 97 })
        for (offset, record) in rows.enumerated() {
            if offset > 0 { text.append(UInt8(ascii: ",")) }
            record.appendWireBytes(to: &text)
        }
        self.init(
            text: text,
            records: rows.map(Entry.init),
            more: false)
    }

    /// The time `sort` orders by, of `entry`.
    static func time(_ entry: Entry, sort: RecordSort) -> Int64 {
        sort.column == "created_at" ? entry.createdAt : entry.updatedAt
    }
}

extension RecordStorage {
    /// The default: ``listRecords(_:from:backwards:)``, written out.
    public func listRecordText(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws
        -> RecordPageText
    {
        RecordPageText(
            rows: try await listRecords(query, from: position, backwards: backwards), limit: query.limit, backwards: backwards)
    }
}

/// A record's wire form written as bytes: `{"id":…,"created_at":…,"updated_at":…` then the stored
/// fields. The one writer behind ``StoredRecord/wireText`` and every list page.
enum WireText {
    /// The whole seconds of `milliseconds` since 1970, rounded down (as timestamps are written).
    static func floorSeconds(_ milliseconds: Int64) -> Int64 {
        floorDiv(milliseconds, 1000)
    }

    /// `value / divisor` rounded towards negative infinity (`divisor` > 0).
    static func floorDiv(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : (value - divisor + 1) / divisor
    }

    static func append<ID: Collection<UInt8>, Body: Collection<UInt8>>(
        id: ID, createdAt: Int64, updatedAt: Int64, body: Body, to text: inout [UInt8]
    ) {
        text.append(contentsOf: #"{"id":""#.utf8)
        text.append(contentsOf: id)  // ids are [A-Za-z0-9_-]: nothing to escape
        text.append(contentsOf: #"","created_at":""#.utf8)
        let created = StoredRecord.timestampBytes(createdAt)
        if let created { StoredRecord.append(created, to: &text) } else { StoredRecord.appendTimestamp(createdAt, to: &text) }
        text.append(contentsOf: #"","updated_at":""#.utf8)
        if let created, floorSeconds(updatedAt) == floorSeconds(createdAt) {
            // Written in the same second (most records): the same text.
            StoredRecord.append(created, to: &text)
        } else {
            StoredRecord.appendTimestamp(updatedAt, to: &text)
        }
        text.append(UInt8(ascii: "\""))
        if body.count > 2 {
            // The stored object without its opening brace: `,"field":…}`.
            text.append(UInt8(ascii: ","))
            text.append(contentsOf: body.dropFirst())
        } else {
            text.append(UInt8(ascii: "}"))
        }
    }
}
