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
        /// One part of a ``RecordOrderValue`` a keyset condition binds.
        enum Part {
            case rank(Int)
            case number(Double)
            case text(String)
        }

        /// The columns of key `index` that vary from record to record (as ``orderBy(_:backwards:filter:)``
        /// orders by them), each with the part of `value` it compares with. A field's columns that
        /// `filter` fixes (``RecordIndexHint/fixed``) are left out, when `value` has the fixed
        /// value or there is no value: every listed record has it, so they order nothing, and an
        /// index whose leading columns the query fixes serves the order and the seek.
        static func columns(_ key: RecordOrderKey, index: Int, value: RecordOrderValue?, filter: RecordPredicate?)
            -> [(String, Part)]
        {
            let value = value ?? RecordOrderValue(rank: 0)
            switch key.source {
            case .created, .updated: return [("k\(index)n", .number(value.number))]
            case .id: return [("k\(index)t", .text(value.text))]
            case .field(let name):
                var fixed: (rank: Int?, number: Double?, text: String?) = (nil, nil, nil)
                for test in filter?.topLevelFieldTests ?? [] where test.field == name {
                    guard let hint = RecordIndexHint(test.test) else { continue }
                    let values = hint.fixed
                    fixed = (values.rank, values.number ?? fixed.number, values.text ?? fixed.text)
                }
                var columns: [(String, Part)] = []
                if fixed.rank == nil || fixed.rank != value.rank && !unpositioned(value) {
                    columns.append(("k\(index)r", .rank(value.rank)))
                }
                if fixed.number == nil || fixed.number != value.number && !unpositioned(value) {
                    columns.append(("k\(index)n", .number(value.number)))
                }
                if fixed.text == nil || fixed.text != value.text && !unpositioned(value) {
                    columns.append(("k\(index)t", .text(value.text)))
                }
                return columns
            }
        }

        /// The stand-in value ``orderBy(_:backwards:filter:)`` passes, having no position.
        private static func unpositioned(_ value: RecordOrderValue) -> Bool { value.rank == -1 }

        /// The rows after (before, `backwards`) `values` in the order. When every key goes in one
        /// direction, one row comparison of the columns ``orderBy(_:backwards:filter:)`` orders by
        /// (the same ``columns(_:index:value:filter:)``), which the backend seeks to in a declared
        /// index, with the first column's bound again on its own; otherwise key by key, the earlier
        /// keys equal and this one past. `bind` binds one
        /// part and returns its placeholder; it is called in the order the placeholders appear in
        /// the SQL.
        static func keyset(
            _ order: [RecordOrderKey], after values: [RecordOrderValue], backwards: Bool, filter: RecordPredicate?,
            bind: (Part) -> String
        ) -> String {
            let sameColumns = order.indices.allSatisfy { index in
                columns(order[index], index: index, value: values[index], filter: filter).map(\.0)
                    == columns(order[index], index: index, value: RecordOrderValue(rank: -1), filter: filter).map(\.0)
            }
            if Set(order.map(\.descending)).count == 1, sameColumns {
                let parts = order.indices.flatMap { columns(order[$0], index: $0, value: values[$0], filter: filter) }
                let descending = order[0].descending != backwards
                let bound = parts.map { bind($0.1) }
                // The first column's bound again on its own, which SQLite seeks to in an expression
                // index (it does not seek to a row value of expressions).
                let first = "\(parts[0].0) \(descending ? "<=" : ">=") \(bind(parts[0].1))"
                return "((" + parts.map(\.0).joined(separator: ", ") + ") \(descending ? "<" : ">") ("
                    + bound.joined(separator: ", ") + ") AND \(first))"
            }
            func row(_ index: Int) -> String {
                switch order[index].source {
                case .created, .updated: "k\(index)n"
                case .id: "k\(index)t"
                case .field: "(k\(index)r, k\(index)n, k\(index)t)"
                }
            }
            func bound(_ index: Int) -> String {
                let value = values[index]
                switch order[index].source {
                case .created, .updated: return bind(.number(value.number))
                case .id: return bind(.text(value.text))
                case .field:
                    return "(" + bind(.rank(value.rank)) + ", " + bind(.number(value.number)) + ", " + bind(.text(value.text))
                        + ")"
                }
            }
            var alternatives: [String] = []
            for index in order.indices {
                var terms: [String] = []
                for earlier in 0..<index { terms.append("\(row(earlier)) = \(bound(earlier))") }
                let descending = order[index].descending != backwards
                terms.append("\(row(index)) \(descending ? "<" : ">") \(bound(index))")
                alternatives.append("(" + terms.joined(separator: " AND ") + ")")
            }
            // Inside a CASE, so that no planner splits the alternatives into separate scans to sort
            // afterwards (PostgreSQL's BitmapOr); the first key's first varying column bounded on its
            // own, which both backends seek to, reading the index in order.
            let condition = "(CASE WHEN " + alternatives.joined(separator: " OR ") + " THEN 1 ELSE 0 END) <> 0"
            let descending = order[0].descending != backwards
            guard sameColumns, let first = columns(order[0], index: 0, value: values[0], filter: filter).first else {
                return condition
            }
            return "(\(condition) AND \(first.0) \(descending ? "<=" : ">=") \(bind(first.1)))"
        }

        /// The `ORDER BY` terms (walking `backwards` reverses every key): the columns that vary
        /// (``columns(_:index:value:filter:)``), so the terms are the columns of a declared index
        /// (``RecordIndex``) after those the query fixes. Columns constant for a key (the rank and
        /// text of a time, the rank and number of `id`) are left out.
        static func orderBy(_ order: [RecordOrderKey], backwards: Bool, filter: RecordPredicate?) -> String {
            order.indices.flatMap { index in
                let direction = order[index].descending != backwards ? "DESC" : "ASC"
                return columns(order[index], index: index, value: RecordOrderValue(rank: -1), filter: filter).map {
                    "\($0.0) \(direction)"
                }
            }.joined(separator: ", ")
        }
    }
}
