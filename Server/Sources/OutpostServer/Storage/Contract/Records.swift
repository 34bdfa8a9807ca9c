import Foundation
@_spi(OutpostInternal) public import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// One stored record: a JSON object of the client's fields plus what the server owns.
public struct StoredRecord: Sendable, Hashable {
    public var type: String
    public var id: String
    /// The user the record belongs to; `nil` for records created without signing in.
    public var owner: String?
    /// The client's fields as stored: compact JSON object text with sorted keys, without the
    /// server-owned keys.
    public var body: String
    /// Grows by one with every change; the ETag is derived from it.
    public var version: Int
    /// Milliseconds since 1970.
    public var createdAt: Int64
    public var updatedAt: Int64
    /// The global insertion order, the tie-breaker of keyset pagination.
    public var seq: Int64
    /// Readable by its owner only (chosen at creation with `?visibility=private`).
    public var isPrivate: Bool = false

    /// The strong ETag of this version, e.g. `"v3"`.
    public var etag: String { "\"v\(version)\"" }

    /// Keys the server owns: ignored in request bodies, added in responses.
    public static let serverKeys: Set<String> = ["id", "created_at", "updated_at"]

    /// The client's fields, parsed.
    public var fields: [String: JSONValue] {
        get throws {
            guard case .object(let fields) = try JSONValue(parsing: Data(body.utf8)) else {
                throw ServerError(
                    .internalServerError, code: "corrupt_record", message: "Record \(type)/\(id) does not hold a JSON object")
            }
            return fields
        }
    }

    /// The wire form: the fields plus `id`, `created_at` and `updated_at` (ISO 8601, whole seconds, UTC).
    public var json: JSONValue {
        (try? JSONValue(parsing: Data(wireText.utf8))) ?? .null
    }

    /// The wire form as JSON text, spliced from the stored text without parsing it: the server-owned
    /// keys first, then the stored fields (which never contain those keys).
    public var wireText: String {
        String(decoding: wireBytes, as: UTF8.self)
    }

    /// ``wireText`` as UTF-8 bytes.
    var wireBytes: [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(body.utf8.count + 96)
        appendWireBytes(to: &text)
        return text
    }

    /// Appends ``wireBytes`` to `text` (a list page writes its records into one buffer).
    func appendWireBytes(to text: inout [UInt8]) {
        WireText.append(id: id.utf8, createdAt: createdAt, updatedAt: updatedAt, body: body.utf8, to: &text)
    }

    /// `2026-11-21T06:07:47Z` from milliseconds since 1970 (UTC, proleptic Gregorian calendar).
    static func timestamp(_ milliseconds: Int64) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(20)
        appendTimestamp(milliseconds, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends ``timestamp(_:)``'s text to `text`.
    static func appendTimestamp(_ milliseconds: Int64, to text: inout [UInt8]) {
        if let bytes = timestampBytes(milliseconds) {
            append(bytes, to: &text)
            return
        }
        let seconds = WireText.floorSeconds(milliseconds)
        let (year, month, day) = civilDate(seconds)
        let secondOfDay = seconds - WireText.floorDiv(seconds, 86_400) * 86_400
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        text.append(
            contentsOf:
                "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
                .utf8)
    }

    /// The 20 bytes of ``timestamp(_:)`` for a four-digit year (every real one), held in a fixed
    /// buffer; `nil` for other years.
    static func timestampBytes(_ milliseconds: Int64) -> (UInt64, UInt64, UInt64)? {
        let seconds = WireText.floorSeconds(milliseconds)
        let (year, month, day) = civilDate(seconds)
        guard (0...9999).contains(year) else { return nil }
        let secondOfDay = seconds - WireText.floorDiv(seconds, 86_400) * 86_400
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            func put(_ value: Int64, _ count: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + count - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(truncatingIfNeeded: 48 + value % 10)
                    value /= 10
                }
            }
            put(year, 4, at: 0)
            buffer[4] = UInt8(ascii: "-")
            put(month, 2, at: 5)
            buffer[7] = UInt8(ascii: "-")
            put(day, 2, at: 8)
            buffer[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11)
            buffer[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14)
            buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17)
            buffer[19] = UInt8(ascii: "Z")
        }
        return digits
    }

    /// Appends the 20 bytes ``timestampBytes(_:)`` made.
    static func append(_ bytes: (UInt64, UInt64, UInt64), to text: inout [UInt8]) {
        withUnsafeBytes(of: bytes) { text.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<20])) }
    }

    /// The proleptic Gregorian date of a time in seconds since 1970.
    static func civilDate(_ seconds: Int64) -> (year: Int64, month: Int64, day: Int64) {
        CivilDate.date(days: WireText.floorDiv(seconds, 86_400))
    }
}

/// Which order a list comes in.
public enum RecordSort: String, Sendable, CaseIterable {
    case created, newest = "-created", updated, recentlyUpdated = "-updated"

    var column: String {
        switch self {
        case .created, .newest: return "created_at"
        case .updated, .recentlyUpdated: return "updated_at"
        }
    }

    var descending: Bool { self == .newest || self == .recentlyUpdated }
}

/// Where a keyset page starts: after (or before) the record with this sort value and sequence number.
public struct RecordPosition: Sendable, Hashable, Codable {
    public var time: Int64
    public var seq: Int64
    /// In a list ordered by fields (``RecordQuery/order``): the record's values under its keys,
    /// instead of `time` and `seq`.
    public var values: [RecordOrderValue]? = nil

    public init(time: Int64, seq: Int64) {
        self.time = time
        self.seq = seq
    }

    /// A position in a list ordered by fields.
    public init(values: [RecordOrderValue]) {
        self.init(time: 0, seq: 0)
        self.values = values
    }
}

/// A list query: the type, equality filters on fields, the order, and where to start.
public struct RecordQuery: Sendable {
    public var type: String
    /// Field name and the value it must equal. Two names are the record's own, never body fields
    /// (so a body cannot pose as another owner): `owner` compares the owner's user id (`null`:
    /// records without an owner), `private` the visibility (`true` or `false`); any other value of
    /// those two matches nothing.
    public var filters: [(field: String, value: JSONValue)]
    public var sort: RecordSort
    public var limit: Int
    /// Who lists: private records of other users are left out. `nil` (anonymous) sees no private record.
    /// Ignored when ``access`` is set.
    public var viewer: String?
    /// The records the caller may list, from the access rules (``RecordPredicate``); `nil` keeps
    /// the default, ``viewer``'s visibility.
    public var access: RecordPredicate?
    /// The caller's own filter (`?filter=EXPR`), compiled: the list holds only records it grants,
    /// on top of ``access`` (or the default visibility). `nil` filters nothing.
    public var filter: RecordPredicate?
    /// An order by fields (`?sort=-views,title`), ending with a key no two records share (`id`);
    /// `nil` orders by ``sort``. Such lists are ordered by the query itself, not by an index.
    public var order: [RecordOrderKey]?
    /// The most bytes of record text a keyset page holds: the page ends before the record that
    /// would pass it (it always holds one) and its cursor continues there. `Int.max` bounds nothing.
    public var maxBytes: Int = .max

    public init(
        type: String, filters: [(field: String, value: JSONValue)] = [], sort: RecordSort = .created, limit: Int = 20,
        viewer: String? = nil
    ) {
        self.viewer = viewer
        self.type = type
        self.filters = filters
        self.sort = sort
        self.limit = limit
    }

    /// The same type and caller, without filters or order: every record the caller may list.
    var visibilityOnly: RecordQuery {
        var query = RecordQuery(type: type, viewer: viewer)
        query.access = access
        return query
    }
}

/// Why a write did not happen.
public enum RecordWriteFailure: Error, Sendable {
    case notFound
    case versionMismatch(current: Int)
}
