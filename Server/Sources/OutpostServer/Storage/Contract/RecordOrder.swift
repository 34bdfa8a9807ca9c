import Foundation
@_spi(OutpostInternal) public import OutpostCore

/// One key of a list ordered by fields (`?sort=-views,title`): a top-level field or one of the
/// record's own values, ascending or descending. See ``RecordQuery/order``.
public struct RecordOrderKey: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        case created
        case updated
        case id
        /// A top-level field of the body, by name.
        case field(String)
    }

    public var source: Source
    public var descending: Bool

    public init(_ source: Source, descending: Bool = false) {
        self.source = source
        self.descending = descending
    }

    /// The key as `sort` spells it: `-views`, `created`.
    public var text: String {
        let name: String
        switch source {
        case .created: name = "created"
        case .updated: name = "updated"
        case .id: name = "id"
        case .field(let field): name = field
        }
        return (descending ? "-" : "") + name
    }
}

/// Where a record falls under one ``RecordOrderKey``: compared as `(rank, number, text)`, so every
/// JSON type has one place, the same on every backend.
///
/// Ranks: 0 `null` or missing, 1 a boolean (`false` before `true`), 2 a number, 3 a string (by
/// code point, on its first ``textPrefix`` characters), 4 an array or an object (ordered among
/// themselves by the tie-break only). A string longer than the prefix sorts with the others that
/// share it, then by the next key; the prefix keeps cursors, which carry these values, short.
public struct RecordOrderValue: Sendable, Hashable, Codable {
    public var rank: Int
    /// A boolean as 0 or 1, a number as a 64-bit float, anything else 0.
    public var number: Double
    /// A string's first ``textPrefix`` Unicode scalars, anything else empty.
    public var text: String

    /// How many Unicode scalars of a string the order reads.
    public static let textPrefix = 100

    public init(rank: Int, number: Double = 0, text: String = "") {
        self.rank = rank
        self.number = number
        self.text = text
    }

    /// The value of a field (`nil` when missing).
    public init(_ value: JSONValue?) {
        switch value {
        case nil, .null?: self.init(rank: 0)
        case .bool(let flag)?: self.init(rank: 1, number: flag ? 1 : 0)
        case .int(let number)?: self.init(rank: 2, number: Double(number))
        case .double(let number)?: self.init(rank: 2, number: number)
        case .largeInteger(let digits)?: self.init(rank: 2, number: Double(digits) ?? 0)
        case .string(let text)?:
            self.init(rank: 3, text: String(String.UnicodeScalarView(text.unicodeScalars.prefix(Self.textPrefix))))
        case .array?, .object?: self.init(rank: 4)
        }
    }

    /// The record's values under `keys`, in their order.
    public static func values(of record: StoredRecord, keys: [RecordOrderKey]) throws -> [RecordOrderValue] {
        let fields = keys.contains { if case .field = $0.source { true } else { false } } ? try record.fields : [:]
        return keys.map { key in
            switch key.source {
            case .created: RecordOrderValue(rank: 2, number: Double(record.createdAt))
            case .updated: RecordOrderValue(rank: 2, number: Double(record.updatedAt))
            case .id: RecordOrderValue(rank: 3, text: record.id)
            case .field(let name): RecordOrderValue(fields[name])
            }
        }
    }

    // A cursor carries these: the number as its bit pattern, so it comes back exactly.
    private enum CodingKeys: String, CodingKey { case rank = "r", bits = "n", text = "t" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rank = try container.decode(Int.self, forKey: .rank)
        guard let bits = UInt64(try container.decode(String.self, forKey: .bits)) else {
            throw DecodingError.dataCorruptedError(forKey: .bits, in: container, debugDescription: "not a bit pattern")
        }
        number = Double(bitPattern: bits)
        text = try container.decode(String.self, forKey: .text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rank, forKey: .rank)
        try container.encode(String(number.bitPattern), forKey: .bits)
        try container.encode(text, forKey: .text)
    }
}

extension RecordOrderKey {
    /// The SQL both backends write for a list ordered by `order`, over a subquery whose columns
    /// `k<i>r`, `k<i>n`, `k<i>t` hold each key's ``RecordOrderValue``.
    enum SQL {
        /// The rows after (before, `backwards`) `values` in the order: key by key, the earlier
        /// keys equal and this one past. `bound` binds a value's three parts and returns their
        /// placeholders as a row, `(?, ?, ?)`.
        static func keyset(
            _ order: [RecordOrderKey], after values: [RecordOrderValue], backwards: Bool,
            bound: (RecordOrderValue) -> String
        ) -> String {
            func row(_ index: Int) -> String { "(k\(index)r, k\(index)n, k\(index)t)" }
            var alternatives: [String] = []
            for index in order.indices {
                var terms: [String] = []
                for earlier in 0..<index { terms.append("\(row(earlier)) = \(bound(values[earlier]))") }
                let descending = order[index].descending != backwards
                terms.append("\(row(index)) \(descending ? "<" : ">") \(bound(values[index]))")
                alternatives.append("(" + terms.joined(separator: " AND ") + ")")
            }
            return alternatives.joined(separator: " OR ")
        }

        /// The `ORDER BY` terms (walking `backwards` reverses every key).
        static func orderBy(_ order: [RecordOrderKey], backwards: Bool) -> String {
            order.indices.map { index in
                let direction = order[index].descending != backwards ? "DESC" : "ASC"
                return "k\(index)r \(direction), k\(index)n \(direction), k\(index)t \(direction)"
            }.joined(separator: ", ")
        }
    }
}
