/// An index the operator declared on the records of one type: up to ``maxFields`` top-level
/// fields, in order (`outpost types index posts views`, or `"indexes"` in a rules file).
///
/// Each backend builds it as an expression index over `(type, key columns of each field…, id
/// descending)`, the same expressions a list ordered by those fields sorts on
/// (``RecordOrderValue``), so a filtered, sorted keyset page reads the index in order and stops
/// after a page. `id` goes the other way because a sort ends with `id` ascending: walked
/// backwards, the index gives `-views` (then `id`) exactly; `views` comes in order up to ties,
/// which the database sorts among themselves.
public struct RecordIndex: Sendable, Hashable {
    /// The record type whose lists the index serves.
    public var type: String
    /// The top-level fields, in the order the index sorts them.
    public var fields: [String]

    /// The most fields one index holds (as many as `sort` names).
    public static let maxFields = 3
    /// The most indexes one type may have.
    public static let maxPerType = 16
    /// Names that are the record's own values, which have indexes already, and cannot be indexed as fields.
    public static let reservedNames: Set<String> = ["id", "created", "updated", "created_at", "updated_at"]

    /// Validates `type` and `fields`.
    ///
    /// - Parameters:
    ///   - type: The record type, 1–64 letters, digits, `_` or `-`.
    ///   - fields: Top-level field names, 1–64 letters, digits, `_` or `-` each, not starting with `-`.
    /// - Throws: ``ServerError`` 400 `invalid_index` whose message says what to write.
    public init(type: String, fields: [String]) throws(ServerError) {
        guard Self.isValidName(type) else {
            throw Self.invalid("'\(type)' is not a record type: write 1–64 letters, digits, '_' or '-', e.g. posts")
        }
        guard (1...Self.maxFields).contains(fields.count) else {
            throw Self.invalid("An index holds 1 to \(Self.maxFields) fields, e.g. views, or tag title")
        }
        for field in fields {
            guard Self.isValidName(field), !field.hasPrefix("-") else {
                throw Self.invalid(
                    "'\(field)' is not a field name an index can hold: write a top-level field name of 1–64 letters, digits, "
                        + "'_' or '-' (not starting with '-'), e.g. views")
            }
            guard !Self.reservedNames.contains(field) else {
                throw Self.invalid(
                    "'\(field)' is one of the record's own values, which are indexed already; name a field of the body")
            }
        }
        guard Set(fields).count == fields.count else { throw Self.invalid("An index names each field once") }
        self.type = type
        self.fields = fields
    }

    /// An index read back from storage, already validated when it was declared.
    init(validated type: String, fields: [String]) {
        self.type = type
        self.fields = fields
    }

    /// The fields as storage keeps them: joined by commas.
    var fieldList: String { fields.joined(separator: ",") }

    /// The database index's name: `records_ix_` and a 64-bit FNV-1a hash of the type and fields in hex,
    /// short enough for PostgreSQL's 63-byte names whatever the names are.
    var name: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (type + "\u{0}" + fieldList).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "records_ix_" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The columns of the database index: the type, each field's key expressions as `key` writes
    /// them (the text through `text`, e.g. to add a collation), then `id` as `id` writes it.
    func columns(key: (String) -> (rank: String, number: String, text: String), text: (String) -> String, id: String)
        -> String
    {
        var columns = ["type"]
        for field in fields {
            let expressions = key(field)
            columns += ["(\(expressions.rank))", "(\(expressions.number))", "(\(text(expressions.text)))"]
        }
        return (columns + [id]).joined(separator: ", ")
    }

    /// The command that declares this index, for messages.
    var command: String { "outpost types index \(type) \(fields.joined(separator: " "))" }

    static func isValidName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
                    || byte == 0x2D
            }
    }

    static func invalid(_ message: String) -> ServerError {
        ServerError.badRequest("invalid_index", message)
    }
}

/// Declared indexes, kept in storage so every instance and every restart sees them.
public protocol RecordIndexStorage: Sendable {
    /// The declared indexes of `type`, or of every type when `type` is `nil`, ordered by type and fields.
    ///
    /// - Parameter type: A record type, or `nil` for all.
    func recordIndexes(type: String?) async throws -> [RecordIndex]
    /// Builds the index (idempotent: nothing happens when it exists) and records the declaration.
    ///
    /// - Parameter index: The index to build.
    func createRecordIndex(_ index: RecordIndex) async throws
    /// Drops the index and its declaration; `false` when it was not declared.
    ///
    /// - Parameter index: The index to drop.
    func dropRecordIndex(_ index: RecordIndex) async throws -> Bool
    /// How many records of `query.type` its caller may list (``RecordQuery/access``, or the
    /// default visibility for ``RecordQuery/viewer``), counting no further than `limit`: a bounded
    /// query. The query's filters and order are left out; records the caller cannot read are never
    /// counted, so the figure reveals nothing the caller could not list.
    ///
    /// - Parameters:
    ///   - query: The list whose type and caller count.
    ///   - limit: The most records the count reaches.
    func countRecords(_ query: RecordQuery, upTo limit: Int) async throws -> Int
}

extension RecordPredicate {
    /// The tests of top-level fields that hold for every record the predicate selects: the tests
    /// at the top level of its `&&`, by field name. The list SQL repeats them as conditions on the
    /// index expressions (``RecordIndexHint``), which a declared index can seek on.
    var topLevelFieldTests: [(field: String, test: RecordTest)] {
        switch self {
        case .and(let a, let b): return a.topLevelFieldTests + b.topLevelFieldTests
        case .test(.field(let keys), let test) where keys.count == 1: return [(keys[0], test)]
        default: return []
        }
    }
}

extension RecordPredicate {
    /// The predicate without the tests at the top level of its `&&` that their ``RecordIndexHint``
    /// states exactly (`== null`, `== true`, `== false`, `==` a string of fewer than
    /// ``RecordOrderValue/textPrefix`` characters): the list SQL states those once, on the index
    /// expressions, so the planner estimates them from the index's statistics instead of
    /// counting the same condition twice.
    var leavingOutExactHints: RecordPredicate {
        switch self {
        case .and(let a, let b): return .conjunction(a.leavingOutExactHints, b.leavingOutExactHints)
        case .test(.field(let keys), let test) where keys.count == 1 && RecordIndex.isValidName(keys[0]):
            switch test {
            case .isNull, .isTrue, .isFalse: return .constant(true)
            case .equalsString(let text) where text.unicodeScalars.count < RecordOrderValue.textPrefix: return .constant(true)
            default: return self
            }
        default: return self
        }
    }
}

/// A condition on a field's key columns (rank, number, text: ``RecordOrderValue``) that every
/// record passing `test` meets. The list SQL adds it next to the exact test, so the backend can
/// seek a declared index on those columns; it never selects a record the exact test refuses.
enum RecordIndexHint {
    /// The rank the field must have, an optional condition on its number and on its text prefix.
    case rank(Int, number: (op: String, value: Double)?, text: (op: String, value: String)?)

    init?(_ test: RecordTest) {
        func prefix(_ text: String) -> String {
            String(String.UnicodeScalarView(text.unicodeScalars.prefix(RecordOrderValue.textPrefix)))
        }
        switch test {
        case .isNull: self = .rank(0, number: ("=", 0), text: ("=", ""))
        case .isTrue: self = .rank(1, number: ("=", 1), text: ("=", ""))
        case .isFalse: self = .rank(1, number: ("=", 0), text: ("=", ""))
        case .equalsNumber(let value): self = .rank(2, number: ("=", value), text: ("=", ""))
        case .compareNumber(let op, let value): self = .rank(2, number: (op.rawValue, value), text: nil)
        case .equalsString(let text): self = .rank(3, number: ("=", 0), text: ("=", prefix(text)))
        case .compareString(let op, let text):
            // A string before (after) the constant has a prefix no later (earlier) than the constant's.
            let bound = op.rawValue.hasPrefix("<") ? "<=" : ">="
            self = .rank(3, number: ("=", 0), text: (bound, prefix(text)))
        case .startsWith(let text) where !text.isEmpty: self = .rank(3, number: ("=", 0), text: (">=", prefix(text)))
        case .startsWith: self = .rank(3, number: ("=", 0), text: nil)
        }
    }

    /// The values of the key's columns every record the test selects has: the rank always, the
    /// number and the text when the hint fixes them with `=`.
    var fixed: (rank: Int, number: Double?, text: String?) {
        guard case .rank(let rank, let number, let text) = self else { return (0, nil, nil) }
        return (rank, number?.op == "=" ? number?.value : nil, text?.op == "=" ? text?.value : nil)
    }

    /// Whether the hint pins the field to one place in the index, so the index's next fields keep their order.
    var pinsField: Bool {
        guard case .rank(_, let number?, let text?) = self else { return false }
        return number.op == "=" && text.op == "="
    }
}
