public import OutpostExpressions

/// A rule translated for a list query: a condition on a record's columns and fields, with the
/// caller's values already folded in as constants. Each backend writes it as SQL whose every part
/// is true or false, never `NULL`, so `NOT` is exact (``SQLiteStorage``, ``PostgresStorage``).
///
/// It holds exactly when the rule, evaluated against the record, is `true`
/// (``RecordPredicate/compile(_:caller:)`` keeps the language's semantics: types compared as the
/// evaluator compares them, a missing field is `null`).
public indirect enum RecordPredicate: Sendable, Hashable {
    case constant(Bool)
    case and(RecordPredicate, RecordPredicate)
    case or(RecordPredicate, RecordPredicate)
    case not(RecordPredicate)
    case test(RecordColumn, RecordTest)

    /// Whether a test reads the text of a field's string. PostgreSQL's JSONB holds U+0000 as
    /// U+FFFD, so a string with U+0000 cannot be compared exactly there: a list whose condition
    /// reads strings leaves out records whose body holds `\u0000` (``escapedNull``), on every
    /// backend alike. Leaving a record out is the safe way to be wrong: GET decides on the record
    /// itself.
    public var comparesFieldStrings: Bool {
        switch self {
        case .constant: false
        case .and(let a, let b), .or(let a, let b): a.comparesFieldStrings || b.comparesFieldStrings
        case .not(let a): a.comparesFieldStrings
        case .test(.field, .equalsString), .test(.field, .compareString), .test(.field, .startsWith): true
        case .test: false
        }
    }

    /// The text a record's stored body holds for U+0000 in a string (JSON's escape): a body
    /// without it has no U+0000 in any string. (It also matches an escaped backslash followed by
    /// `u0000`, which only leaves out more.)
    public static let escapedNull = "\\u0000"

    /// What a list of a type shows to a caller: records that both rules grant.
    static func conjunction(_ a: RecordPredicate, _ b: RecordPredicate) -> RecordPredicate {
        switch (a, b) {
        case (.constant(false), _), (_, .constant(false)): .constant(false)
        case (.constant(true), let other), (let other, .constant(true)): other
        default: .and(a, b)
        }
    }

    static func disjunction(_ a: RecordPredicate, _ b: RecordPredicate) -> RecordPredicate {
        switch (a, b) {
        case (.constant(true), _), (_, .constant(true)): .constant(true)
        case (.constant(false), let other), (let other, .constant(false)): other
        default: .or(a, b)
        }
    }

    static func negation(_ a: RecordPredicate) -> RecordPredicate {
        if case .constant(let flag) = a { return .constant(!flag) }
        if case .not(let inner) = a { return inner }
        return .not(a)
    }
}

/// A value of a stored record a predicate reads.
public enum RecordColumn: Sendable, Hashable {
    /// The owner's user id, or `NULL`.
    case owner
    case id
    /// The `private` flag, never `NULL`.
    case isPrivate
    /// A field of the body, by its path (`["address", "city"]` for `record.address.city`).
    case field([String])
}

/// What a predicate asks of a column. Every test is false for a value of another type.
public enum RecordTest: Sendable, Hashable {
    /// `null`, or missing.
    case isNull
    case isTrue
    case isFalse
    case equalsString(String)
    case equalsNumber(Double)
    /// An order between strings (by code point) or numbers; the constant is on the right.
    case compareString(Condition.BinaryOperator, String)
    case compareNumber(Condition.BinaryOperator, Double)
    case startsWith(String)
}

/// A rule that cannot be turned into a list query: the part that stops it, for the error.
public struct RuleNotListable: Error, Sendable, CustomStringConvertible {
    public var part: String
    public var description: String {
        "'\(part)' cannot be used to select records in a list: a list rule compares record.<field>, record.owner, "
            + "record.id or record.private with values (literals, caller.*, lists of them) using ==, !=, <, <=, >, >=, "
            + "^= and in, joined by &&, || and !"
    }
}

extension RecordPredicate {
    /// Translates `condition` for a list query by `caller`.
    ///
    /// - Throws: ``RuleNotListable`` for a rule it cannot express exactly, such as one comparing two
    ///   fields, reading `record.created_at`, or asking `x in record.tags`.
    public static func compile(_ condition: Condition, caller: RuleCaller) throws(RuleNotListable) -> RecordPredicate {
        let compiler = RecordPredicateCompiler(caller: caller.value)
        return try compiler.truth(of: compiler.operand(condition.node)).isTrue
    }
}

/// An operand while compiling: a constant, a record column, or a predicate's truth values.
private enum Operand {
    case constant(ExpressionValue)
    case column(RecordColumn)
    /// Its value is `true` where `isTrue` holds, `false` where `isFalse` holds, and not a boolean
    /// elsewhere (`!record.flag` on a record whose `flag` is a string).
    case boolean(isTrue: RecordPredicate, isFalse: RecordPredicate)
}

private struct RecordPredicateCompiler {
    let caller: ExpressionValue

    func truth(of operand: Operand) -> (isTrue: RecordPredicate, isFalse: RecordPredicate) {
        switch operand {
        case .constant(let value): (.constant(value == .bool(true)), .constant(value == .bool(false)))
        case .column(let column): (test(column, .isTrue), test(column, .isFalse))
        case .boolean(let isTrue, let isFalse): (isTrue, isFalse)
        }
    }

    /// A boolean-valued operand from the predicate of its being `true`.
    func boolean(_ isTrue: RecordPredicate) -> Operand {
        if case .constant(let flag) = isTrue { return .constant(.bool(flag)) }
        return .boolean(isTrue: isTrue, isFalse: RecordPredicate.negation(isTrue))
    }

    /// A test, simplified where the column's type answers it.
    func test(_ column: RecordColumn, _ test: RecordTest) -> RecordPredicate {
        switch column {
        case .field: return .test(column, test)
        case .isPrivate:
            switch test {
            case .isTrue, .isFalse: return .test(column, test)
            default: return .constant(false)
            }
        case .owner, .id:
            switch test {
            case .isNull: return column == .id ? .constant(false) : .test(column, test)
            case .isTrue, .isFalse, .equalsNumber, .compareNumber: return .constant(false)
            default: return .test(column, test)
            }
        }
    }

    func operand(_ node: Condition.Node) throws(RuleNotListable) -> Operand {
        switch node {
        case .null: return .constant(.null)
        case .bool(let flag): return .constant(.bool(flag))
        case .number(let number): return .constant(.number(number))
        case .string(let text): return .constant(.string(text))
        case .list(let elements):
            var values: [ExpressionValue] = []
            for element in elements {
                guard case .constant(let value) = try operand(element) else { throw RuleNotListable(part: node.description) }
                values.append(value)
            }
            return .constant(.array(values))
        case .path(let path):
            switch path.root {
            case "caller": return .constant(ExpressionEnvironment(["caller": caller]).value(at: path))
            case "record": return try recordPath(path.keys, node: node)
            default: return .constant(.null)  // `request`: lists have no request body
            }
        case .not(let inner):
            let value = try operand(inner)
            if case .constant(let constant) = value { return .constant(Self.foldNot(constant)) }
            let (isTrue, isFalse) = truth(of: value)
            return .boolean(isTrue: isFalse, isFalse: isTrue)
        case .binary(let op, let left, let right):
            let a = try operand(left)
            let b = try operand(right)
            if case .constant(let x) = a, case .constant(let y) = b {
                return .constant(Self.fold(op, x, y))
            }
            switch op {
            case .and: return boolean(.conjunction(truth(of: a).isTrue, truth(of: b).isTrue))
            case .or: return boolean(.disjunction(truth(of: a).isTrue, truth(of: b).isTrue))
            case .equal: return boolean(try equal(a, b, node: node))
            case .notEqual: return boolean(.negation(try equal(a, b, node: node)))
            case .in:
                guard case .constant(let container) = b else {
                    // A column or a boolean is never an array, except a field.
                    if case .column(.field) = b { throw RuleNotListable(part: node.description) }
                    return .constant(.bool(false))
                }
                guard case .array(let elements) = container else { return .constant(.bool(false)) }
                var result = RecordPredicate.constant(false)
                for element in elements { result = .disjunction(result, try equal(a, .constant(element), node: node)) }
                return boolean(result)
            case .startsWith:
                guard case .column(let column) = a, case .constant(let prefix) = b else {
                    if case .column = b { throw RuleNotListable(part: node.description) }
                    return .constant(.bool(false))  // a boolean, or a constant against a boolean
                }
                guard case .string(let text) = prefix else { return .constant(.bool(false)) }
                return boolean(test(column, .startsWith(text)))
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                var (column, constant, order) = (RecordColumn?.none, ExpressionValue?.none, op)
                switch (a, b) {
                case (.column(let c), .constant(let v)): (column, constant) = (c, v)
                case (.constant(let v), .column(let c)): (column, constant, order) = (c, v, Self.flipped(op))
                case (.column, .column): throw RuleNotListable(part: node.description)
                default: return .constant(.bool(false))  // booleans are not ordered
                }
                switch constant! {
                case .string(let text): return boolean(test(column!, .compareString(order, text)))
                case .number(let number):
                    guard !number.isNaN else { return .constant(.bool(false)) }
                    return boolean(test(column!, .compareNumber(order, number)))
                default: return .constant(.bool(false))
                }
            }
        }
    }

    func recordPath(_ keys: [String], node: Condition.Node) throws(RuleNotListable) -> Operand {
        guard let first = keys.first else { throw RuleNotListable(part: node.description) }
        switch first {
        case "owner", "id", "private":
            // A string or a boolean: any key looked up in it is null.
            guard keys.count == 1 else { return .constant(.null) }
            return .column(first == "owner" ? .owner : first == "id" ? .id : .isPrivate)
        case "created_at", "updated_at":
            guard keys.count == 1 else { return .constant(.null) }
            throw RuleNotListable(part: node.description)
        default:
            return .column(.field(keys))
        }
    }

    /// `a == b` where at most one side is a constant.
    func equal(_ a: Operand, _ b: Operand, node: Condition.Node) throws(RuleNotListable) -> RecordPredicate {
        switch (a, b) {
        case (.constant(let x), .constant(let y)): return .constant(Self.fold(.equal, x, y) == .bool(true))
        case (.column(let column), .constant(let value)), (.constant(let value), .column(let column)):
            switch value {
            case .null: return test(column, .isNull)
            case .bool(let flag): return test(column, flag ? .isTrue : .isFalse)
            case .number(let number): return number.isNaN ? .constant(false) : test(column, .equalsNumber(number))
            case .string(let text): return test(column, .equalsString(text))
            case .array, .object:
                if case .field = column { throw RuleNotListable(part: node.description) }
                return .constant(false)
            }
        case (.boolean(let isTrue, let isFalse), .constant(let value)), (.constant(let value), .boolean(let isTrue, let isFalse)):
            switch value {
            case .bool(true): return isTrue
            case .bool(false): return isFalse
            case .null:
                // Not a boolean: only a `!` of a column can be null.
                return .conjunction(.negation(isTrue), .negation(isFalse))
            default: return .constant(false)
            }
        default:
            throw RuleNotListable(part: node.description)
        }
    }

    static func flipped(_ op: Condition.BinaryOperator) -> Condition.BinaryOperator {
        switch op {
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: op
        }
    }

    /// `!x` on a constant, as the evaluator answers it.
    static func foldNot(_ x: ExpressionValue) -> ExpressionValue {
        evaluate(.not(.path(ExpressionPath(root: "a"))), ["a": x])
    }

    /// `x op y` on constants, as the evaluator answers it.
    static func fold(_ op: Condition.BinaryOperator, _ x: ExpressionValue, _ y: ExpressionValue) -> ExpressionValue {
        evaluate(.binary(op, .path(ExpressionPath(root: "a")), .path(ExpressionPath(root: "b"))), ["a": x, "b": y])
    }

    private static func evaluate(_ node: Condition.Node, _ roots: [String: ExpressionValue]) -> ExpressionValue {
        // Over budget (a comparison of huge caller values) is `null`: not `true`, so it denies.
        (try? Condition(node).evaluate(in: ExpressionEnvironment(roots))) ?? .null
    }
}
