import Foundation
public import OutpostCore

/// One stored record: a JSON object of the client's fields plus what the server owns.
public struct StoredRecord: Sendable, Hashable {
    public var type: String
    public var id: String
    /// The user the record belongs to; `nil` for records created without signing in.
    public var owner: String?
    /// The client's fields, without the server-owned keys.
    public var fields: [String: JSONValue]
    /// Grows by one with every change; the ETag is derived from it.
    public var version: Int
    /// Milliseconds since 1970.
    public var createdAt: Int64
    public var updatedAt: Int64
    /// The global insertion order, the tie-breaker of keyset pagination.
    public var seq: Int64

    /// The strong ETag of this version, e.g. `"v3"`.
    public var etag: String { "\"v\(version)\"" }

    /// Keys the server owns: ignored in request bodies, added in responses.
    public static let serverKeys: Set<String> = ["id", "created_at", "updated_at"]

    /// The wire form: the fields plus `id`, `created_at` and `updated_at` (ISO 8601, whole seconds, UTC).
    public var json: JSONValue {
        var object = fields
        object["id"] = .string(id)
        object["created_at"] = .string(Self.timestamp(createdAt))
        object["updated_at"] = .string(Self.timestamp(updatedAt))
        return .object(object)
    }

    static func timestamp(_ milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return date.formatted(
            .iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon)
                .timeZone(separator: .omitted))
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
}

/// A list query: the type, equality filters on fields, the order, and where to start.
public struct RecordQuery: Sendable {
    public var type: String
    /// Field name and the value it must equal.
    public var filters: [(field: String, value: JSONValue)]
    public var sort: RecordSort
    public var limit: Int

    public init(type: String, filters: [(field: String, value: JSONValue)] = [], sort: RecordSort = .created, limit: Int = 20) {
        self.type = type
        self.filters = filters
        self.sort = sort
        self.limit = limit
    }
}

/// Why a write did not happen.
public enum RecordWriteFailure: Error, Sendable {
    case notFound
    case versionMismatch(current: Int)
}
