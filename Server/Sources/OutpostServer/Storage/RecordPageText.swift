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
    /// The page's records as ``Keys`` keeps them (no string per record; a backend writing the page
    /// from its rows never makes one).
    var keys: Keys
    /// Whether the query found a record beyond the page (in the direction it walked).
    public var more: Bool

    /// The page's records, in page order (at most the query's `limit`).
    public var records: [Entry] {
        get { keys.positions.indices.map { keys.entry($0) } }
        set {
            var keys = Keys(capacity: newValue.count)
            for entry in newValue {
                keys.append(
                    id: entry.id.utf8, version: entry.version, createdAt: entry.createdAt, updatedAt: entry.updatedAt,
                    seq: entry.seq)
            }
            self.keys = keys
        }
    }

    public init(text: [UInt8], records: [Entry], more: Bool) {
        self.text = text
        self.keys = Keys(capacity: 0)
        self.more = more
        self.records = records
    }

    init(text: [UInt8], keys: Keys, more: Bool) {
        self.text = text
        self.keys = keys
        self.more = more
    }

    /// The page of `rows` as ``RecordStorage/listRecords(_:from:backwards:)`` returns them: up to
    /// `limit + 1` records in the order walked (reversed when `backwards`).
    /// The page ends before a record that would take its text past `maxBytes` (and then `more` is
    /// `true`: the cursor continues there); it always holds at least one record.
    public init(rows: [StoredRecord], limit: Int, backwards: Bool, maxBytes: Int = .max) {
        var rows = rows
        var more = rows.count > limit
        if more { rows.removeLast(rows.count - limit) }
        let fitting = Self.fittingCount(rows, maxBytes: maxBytes)
        if fitting < rows.count {
            rows.removeLast(rows.count - fitting)
            more = true
        }
        if backwards { rows.reverse() }
        self.init(records: rows)
        self.more = more
    }

    /// The page of exactly these records, in this order (`more` is `false`).
    public init(records rows: [StoredRecord]) {
        var text: [UInt8] = []
        text.reserveCapacity(rows.reduce(0) { $0 + $1.body.utf8.count + 97 })
        var keys = Keys(capacity: rows.count)
        for (offset, record) in rows.enumerated() {
            if offset > 0 { text.append(UInt8(ascii: ",")) }
            record.appendWireBytes(to: &text)
            keys.append(
                id: record.id.utf8, version: record.version, createdAt: record.createdAt, updatedAt: record.updatedAt,
                seq: record.seq)
        }
        self.init(text: text, keys: keys, more: false)
    }

    /// How many of `rows`, from the first, a page of at most `maxBytes` of text holds (at least one).
    static func fittingCount(_ rows: [StoredRecord], maxBytes: Int) -> Int {
        var bytes = 0
        for (index, record) in rows.enumerated() {
            bytes += (index > 0 ? 1 : 0) + WireText.count(idBytes: record.id.utf8.count, bodyBytes: record.body.utf8.count)
            if bytes > maxBytes { return max(index, 1) }
        }
        return rows.count
    }

    /// The number of records on the page.
    var count: Int { keys.positions.count }

    /// The first record of the page, or `nil` when it has none.
    var first: Entry? { keys.positions.isEmpty ? nil : keys.entry(0) }
    /// The last record of the page, or `nil` when it has none.
    var last: Entry? { keys.positions.isEmpty ? nil : keys.entry(keys.positions.count - 1) }

    /// The time `sort` orders by, of `entry`.
    static func time(_ entry: Entry, sort: RecordSort) -> Int64 {
        sort.column == "created_at" ? entry.createdAt : entry.updatedAt
    }

    /// A page's records without a string per record: their ids and versions in one buffer, as the
    /// page's ETag digests them (per record: the id's length as a little-endian `Int64`, so no two
    /// lists of ids read as the same bytes, the id's bytes, the version as a little-endian `Int64`),
    /// and per record where its id is and the numbers an ``Entry`` has. Equal pages have equal keys.
    struct Keys: Sendable, Equatable {
        struct Position: Sendable, Equatable {
            /// Where the record's length prefix starts in ``bytes``.
            var start: Int
            var idCount: Int
            var version: Int
            var createdAt: Int64
            var updatedAt: Int64
            var seq: Int64
        }

        /// The ETag's input, in the order the records were appended.
        private(set) var bytes: [UInt8] = []
        private(set) var positions: [Position] = []

        init(capacity: Int) {
            bytes.reserveCapacity(capacity * 32)
            positions.reserveCapacity(capacity)
        }

        mutating func append<ID: Collection<UInt8>>(
            id: ID, version: Int, createdAt: Int64, updatedAt: Int64, seq: Int64
        ) {
            let start = bytes.count
            let idCount = id.count
            withUnsafeBytes(of: Int64(idCount).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: id)
            withUnsafeBytes(of: Int64(version).littleEndian) { bytes.append(contentsOf: $0) }
            positions.append(
                Position(
                    start: start, idCount: idCount, version: version, createdAt: createdAt, updatedAt: updatedAt, seq: seq))
        }

        /// Forgets the last record appended.
        mutating func removeLast() {
            guard let last = positions.popLast() else { return }
            bytes.removeSubrange(last.start...)
        }

        /// The id's bytes of the record at `index` (after its 8-byte length prefix).
        func idBytes(_ index: Int) -> ArraySlice<UInt8> {
            let idStart = positions[index].start + 8
            return bytes[idStart..<idStart + positions[index].idCount]
        }

        /// The record at `index` as an ``Entry`` (its id made a string here).
        func entry(_ index: Int) -> Entry {
            let position = positions[index]
            return Entry(
                id: String(decoding: idBytes(index), as: UTF8.self), version: position.version,
                createdAt: position.createdAt, updatedAt: position.updatedAt, seq: position.seq)
        }

        /// The same records in the opposite order.
        func inReverse() -> Keys {
            var keys = Keys(capacity: positions.count)
            keys.bytes.reserveCapacity(bytes.count)
            for index in positions.indices.reversed() {
                let position = positions[index]
                keys.append(
                    id: idBytes(index), version: position.version, createdAt: position.createdAt,
                    updatedAt: position.updatedAt, seq: position.seq)
            }
            return keys
        }
    }
}

extension RecordStorage {
    /// The default: ``listRecords(_:from:backwards:)``, written out.
    public func listRecordText(_ query: RecordQuery, from position: RecordPosition?, backwards: Bool) async throws
        -> RecordPageText
    {
        RecordPageText(
            rows: try await listRecords(query, from: position, backwards: backwards), limit: query.limit, backwards: backwards,
            maxBytes: query.maxBytes)
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

    /// How many bytes ``append(id:createdAt:updatedAt:body:to:)`` writes for an id and a stored
    /// body of these sizes (four-digit years).
    static func count(idBytes: Int, bodyBytes: Int) -> Int {
        // `{"id":"` `","created_at":"` 20 `","updated_at":"` 20 `"`, then the body without its brace, or `}`.
        80 + idBytes + (bodyBytes > 2 ? bodyBytes : 1)
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
