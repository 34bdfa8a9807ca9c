import Foundation
import OutpostCore
import OutpostExpressions

/// A list's `filter` and `sort` evaluated over local records the way the server evaluates them
/// (docs/PROTOCOL.md, "Lists").
struct LocalQuery: Sendable {
    /// One sort key: a top-level field (or `id`), descending when written with `-`.
    struct Key: Sendable, Hashable {
        var field: String
        var descending: Bool
    }

    /// The most sort keys, as on the server.
    static let maxKeys = 3
    /// Strings compare on their first this many characters, as on the server.
    static let sortPrefix = 100

    let condition: Condition?
    let keys: [Key]

    /// - Throws: ``SyncError`` `invalidFilter` or `invalidSort`, saying what to change.
    init(filter: String?, sort: String?) throws {
        if let filter {
            do {
                condition = try Condition(parsing: filter, roots: ["record"])
            } catch {
                throw SyncError("invalid_filter: \(error); write it as for GET /records/{type}?filter=, e.g. record.views > 10")
            }
        } else {
            condition = nil
        }
        keys = try Self.keys(sort)
    }

    static func keys(_ sort: String?) throws -> [Key] {
        guard let sort, !sort.isEmpty else { return [] }
        let parts = sort.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= maxKeys else {
            throw SyncError("invalid_sort: at most \(maxKeys) keys, e.g. -views,title")
        }
        return try parts.map { part in
            let descending = part.hasPrefix("-")
            let field = String(descending ? part.dropFirst() : part)
            guard RecordNames.isValid(field) else {
                throw SyncError(
                    "invalid_sort: \(String(part).debugDescription) is not a field name (1–64 letters, digits, '_' or '-')")
            }
            return Key(field: field, descending: descending)
        }
    }

    func matches(_ record: SyncedRecord) -> Bool {
        guard let condition else { return true }
        var root = record.fields.mapValues(Self.expressionValue)
        root["id"] = .string(record.id)
        return condition.decide(in: ExpressionEnvironment(["record": .object(root)]))
    }

    /// `records` in the query's order; ties (and an empty sort) by id.
    func sorted(_ records: [SyncedRecord]) -> [SyncedRecord] {
        records.sorted { a, b in
            for key in keys {
                let order = Self.compare(value(key.field, of: a), value(key.field, of: b))
                if order != 0 { return key.descending ? order > 0 : order < 0 }
            }
            return a.id.unicodeScalars.lexicographicallyPrecedes(b.id.unicodeScalars)
        }
    }

    private func value(_ field: String, of record: SyncedRecord) -> JSONValue {
        field == "id" ? .string(record.id) : record.fields[field] ?? .null
    }

    /// null < false < true < numbers < strings < arrays and objects (equal among themselves).
    static func compare(_ a: JSONValue, _ b: JSONValue) -> Int {
        let (rankA, rankB) = (rank(a), rank(b))
        if rankA != rankB { return rankA < rankB ? -1 : 1 }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            let (p, q) = (Array(x.unicodeScalars.prefix(sortPrefix)), Array(y.unicodeScalars.prefix(sortPrefix)))
            if p == q { return 0 }
            return p.lexicographicallyPrecedes(q) ? -1 : 1
        default:
            guard let x = number(a), let y = number(b), x != y else { return 0 }
            return x < y ? -1 : 1
        }
    }

    private static func rank(_ value: JSONValue) -> Int {
        switch value {
        case .null: 0
        case .bool(false): 1
        case .bool(true): 2
        case .int, .double, .largeInteger: 3
        case .string: 4
        case .array, .object: 5
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let n): Double(n)
        case .double(let n): n
        case .largeInteger(let digits): Double(digits)
        default: nil
        }
    }

    static func expressionValue(_ value: JSONValue) -> ExpressionValue {
        switch value {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int, .double, .largeInteger: .number(number(value) ?? 0)
        case .string(let text): .string(text)
        case .array(let elements): .array(elements.map(expressionValue))
        case .object(let members): .object(members.mapValues(expressionValue))
        }
    }
}

/// Record types and field names: 1–64 letters, digits, `_` or `-`, as on the server.
enum RecordNames {
    static func isValid(_ name: some StringProtocol) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" || $0 == "-"
            }
    }

    static func check(type: String) throws {
        guard isValid(type) else {
            throw SyncError("\(type.debugDescription) is not a record type: use 1–64 letters, digits, '_' or '-'")
        }
    }
}
