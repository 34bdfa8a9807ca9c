import Foundation

/// A condition on the records of `Record`, built from ``RecordField``s and checked by the compiler,
/// that renders to the expression an Outpost server reads as a list's or a change stream's
/// `filter` (docs/PROTOCOL.md, "Expressions").
///
/// ```swift
/// let filter = Article.views > 10 && Article.tag.in(["swift", "server"]) && Article.subtitle != nil
/// try filter.expression()
/// // record.views > 10 && record.tag in ["swift", "server"] && record.subtitle != null
/// store.items(ListRequest(Article.self).filter(filter))
/// store.changes(of: Article.self, filter: Article.title.hasPrefix("Intro"))
/// ```
///
/// The operators read as the server evaluates them: `==` is true for the same type and value, the
/// orders `<`, `<=`, `>`, `>=` hold between two numbers or two strings (by code point), `in` when
/// the field equals one of the values, `hasPrefix(_:)` when the field is a string
/// starting with the prefix; a comparison with a value of another type, or a missing field, is
/// false, and `!` of it true. Swift's precedence applies: `!` first, then comparisons, `&&`, `||`.
public struct RecordFilter<Record>: Sendable, Hashable, CustomStringConvertible {
    let node: Node

    init(_ node: Node) {
        self.node = node
    }

    /// The expression text, as the server's parser reads it back: fields as `record.<name>`,
    /// strings quoted with `\"`, `\\`, `\n`, `\t` and `\uXXXX` for other control characters,
    /// numbers as JSON numbers, parentheses where precedence needs them.
    ///
    /// - Throws: ``OutpostError`` with ``OutpostError/Code/invalidRequest`` when a field's name
    ///   cannot be written in the filter language, a value is NaN or infinite, or a value is an
    ///   array or an object.
    public func expression() throws(OutpostError) -> String {
        var output = ""
        try node.write(to: &output)
        return output
    }

    /// The expression text, or, when it cannot be rendered, why (see ``expression()``).
    public var description: String {
        do {
            return try expression()
        } catch {
            return "<invalid filter: \(error.message)>"
        }
    }

    /// Records matching both filters (`&&`).
    ///
    /// - Parameters:
    ///   - left: The first condition.
    ///   - right: The second condition, read only for records the first matches.
    public static func && (left: RecordFilter, right: RecordFilter) -> RecordFilter {
        RecordFilter(.and(left.node, right.node))
    }

    /// Records matching either filter (`||`).
    ///
    /// - Parameters:
    ///   - left: The first condition.
    ///   - right: The second condition, read only for records the first does not match.
    public static func || (left: RecordFilter, right: RecordFilter) -> RecordFilter {
        RecordFilter(.or(left.node, right.node))
    }

    /// Records the filter does not match (`!`). A comparison is false, not missing, for a record
    /// without the field, so `!(Article.views > 10)` matches records without `views` too.
    ///
    /// - Parameter filter: The condition to negate.
    public static prefix func ! (filter: RecordFilter) -> RecordFilter {
        RecordFilter(.not(filter.node))
    }
}

extension RecordField {
    /// Records whose field holds `value`, of the same type (`record.field == value`).
    ///
    /// - Parameters:
    ///   - field: The field to compare.
    ///   - value: The value to compare it with.
    public static func == (field: RecordField, value: Value) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .equal, value.recordFieldValue))
    }

    /// Records whose field does not hold `value` (`record.field != value`), missing fields included.
    ///
    /// - Parameters:
    ///   - field: The field to compare.
    ///   - value: The value to compare it with.
    public static func != (field: RecordField, value: Value) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .notEqual, value.recordFieldValue))
    }

    /// Records without the field, or with `null` in it (`record.field == null`).
    ///
    /// - Parameters:
    ///   - field: The field to test.
    ///   - none: The `nil` literal.
    public static func == (field: RecordField, none: _OptionalNilComparisonType) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .equal, .null))
    }

    /// Records whose field holds a value other than `null` (`record.field != null`).
    ///
    /// - Parameters:
    ///   - field: The field to test.
    ///   - none: The `nil` literal.
    public static func != (field: RecordField, none: _OptionalNilComparisonType) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .notEqual, .null))
    }

    /// Records whose field equals one of `values` (`record.field in [a, b]`); none when `values`
    /// is empty.
    ///
    /// - Parameter values: The values to accept; an Outpost server reads at most 100.
    public func `in`(_ values: some Sequence<Value>) -> RecordFilter<Record> {
        RecordFilter(.isIn(names, values.map(\.recordFieldValue)))
    }
}

extension RecordField where Value: ComparableRecordFieldValue {
    /// Records whose field is below `value`: both numbers, or both strings by code point.
    ///
    /// - Parameters:
    ///   - field: The field to compare.
    ///   - value: The value to compare it with.
    public static func < (field: RecordField, value: Value) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .less, value.recordFieldValue))
    }

    /// Records whose field is at most `value`: both numbers, or both strings by code point.
    ///
    /// - Parameters:
    ///   - field: The field to compare.
    ///   - value: The value to compare it with.
    public static func <= (field: RecordField, value: Value) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .lessOrEqual, value.recordFieldValue))
    }

    /// Records whose field is above `value`: both numbers, or both strings by code point.
    ///
    /// - Parameters:
    ///   - field: The field to compare.
    ///   - value: The value to compare it with.
    public static func > (field: RecordField, value: Value) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .greater, value.recordFieldValue))
    }

    /// Records whose field is at least `value`: both numbers, or both strings by code point.
    ///
    /// - Parameters:
    ///   - field: The field to compare.
    ///   - value: The value to compare it with.
    public static func >= (field: RecordField, value: Value) -> RecordFilter<Record> {
        RecordFilter(.test(field.names, .greaterOrEqual, value.recordFieldValue))
    }
}

extension RecordField where Value == String {
    /// Records whose field is a string starting with `prefix` (`record.field ^= prefix`), compared
    /// by Unicode scalars without normalization.
    ///
    /// - Parameter prefix: The start to look for; every string starts with `""`.
    public func hasPrefix(_ prefix: String) -> RecordFilter<Record> {
        RecordFilter(.test(names, .startsWith, .string(prefix)))
    }
}

extension RecordField where Value == String? {
    /// Records whose field is a string starting with `prefix` (`record.field ^= prefix`), compared
    /// by Unicode scalars without normalization; a missing or `null` field does not match.
    ///
    /// - Parameter prefix: The start to look for; every string starts with `""`.
    public func hasPrefix(_ prefix: String) -> RecordFilter<Record> {
        RecordFilter(.test(names, .startsWith, .string(prefix)))
    }
}

// MARK: - The tree and its text

extension RecordFilter {
    /// A filter's syntax tree: tests of one field against literal values, joined by `&&`, `||`, `!`.
    indirect enum Node: Sendable, Hashable {
        case test([String], Operator, JSONValue)
        case isIn([String], [JSONValue])
        case not(Node)
        case and(Node, Node)
        case or(Node, Node)

        /// Binding strength as the language reads it: `||` 1, `&&` 2, comparisons 3, `!` 4.
        var precedence: Int {
            switch self {
            case .or: 1
            case .and: 2
            case .test, .isIn: 3
            case .not: 4
            }
        }

        func write(to output: inout String) throws(OutpostError) {
            switch self {
            case .test(let names, let op, let value):
                try RecordFilterText.path(names, to: &output)
                output += " \(op.rawValue) "
                try RecordFilterText.literal(value, to: &output)
            case .isIn(let names, let values):
                try RecordFilterText.path(names, to: &output)
                output += " in ["
                for (index, value) in values.enumerated() {
                    if index > 0 { output += ", " }
                    try RecordFilterText.literal(value, to: &output)
                }
                output += "]"
            case .not(let operand):
                output += "!"
                try operand.write(to: &output, parenthesizedBelow: 4)
            case .and(let left, let right):
                // `&&` and `||` group from the left: a right operand of the same strength needs parentheses.
                try left.write(to: &output, parenthesizedBelow: 2)
                output += " && "
                try right.write(to: &output, parenthesizedBelow: 3)
            case .or(let left, let right):
                try left.write(to: &output, parenthesizedBelow: 1)
                output += " || "
                try right.write(to: &output, parenthesizedBelow: 2)
            }
        }

        private func write(to output: inout String, parenthesizedBelow minimum: Int) throws(OutpostError) {
            if precedence < minimum {
                output += "("
                try write(to: &output)
                output += ")"
            } else {
                try write(to: &output)
            }
        }
    }

    /// A comparison of a field with a value.
    enum Operator: String, Sendable, Hashable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case startsWith = "^="
    }
}

/// The spelling of paths and literals in the expression language (docs/PROTOCOL.md, "Grammar").
enum RecordFilterText {
    /// The most names after `record` in a path: the language reads 8 names, the root included.
    static let maxNestedNames = 7

    /// `record.name.name`, each name `[A-Za-z_][A-Za-z0-9_]*`.
    static func path(_ names: [String], to output: inout String) throws(OutpostError) {
        guard !names.isEmpty, names.count <= maxNestedNames else {
            throw OutpostError(
                .invalidRequest,
                "A filter field has \(names.count) names; the filter language reads 1 to \(maxNestedNames) (record.a.b)",
                suggestion: "Name the field with at most \(maxNestedNames) names")
        }
        output += "record"
        for name in names {
            guard isIdentifier(name) else {
                throw OutpostError(
                    .invalidRequest,
                    "'\(name)' cannot be a field in a filter: a name there is a letter or '_' followed by letters, "
                        + "digits or '_'",
                    suggestion: "Filter on such a field with ListRequest.filter(_:) and an equality parameter "
                        + "(ListRequest.filter(_:_:)), or rename the field")
            }
            output += "."
            output += name
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, isLetter(first) || first == UInt8(ascii: "_") else { return false }
        return bytes.dropFirst().allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    static func literal(_ value: JSONValue, to output: inout String) throws(OutpostError) {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .int(let number): output += String(number)
        case .double(let number): output += try self.number(number)
        case .largeInteger(let digits):
            // Kept as written when it is an integer literal of the language; else as the nearest Double.
            if isIntegerLiteral(digits) {
                output += digits
            } else {
                output += try number(Double(digits) ?? .nan)
            }
        case .string(let text): output += quoted(text)
        case .array, .object:
            throw OutpostError(
                .invalidRequest, "A filter compares a field with null, a boolean, a number or a string, not \(value)",
                suggestion: "Compare with a value of a RecordFieldValue type, or list values with RecordField.in(_:)")
        }
    }

    /// A finite number as a JSON number: integers below 2^53 with their digits, others in the
    /// shortest form that reads back to the same `Double`, with the exponent unsigned when positive
    /// (`1e20`, `1.5e-7`).
    static func number(_ number: Double) throws(OutpostError) -> String {
        guard number.isFinite else {
            throw OutpostError(
                .invalidRequest, "A filter cannot compare with \(number): the filter language has only finite numbers",
                suggestion: "Check the value before filtering, e.g. with Double.isFinite")
        }
        if number == number.rounded(.towardZero), abs(number) < 9_007_199_254_740_992 {
            return String(Int64(number))
        }
        return "\(number)".replacingOccurrences(of: "e+", with: "e")
    }

    static func isIntegerLiteral(_ digits: String) -> Bool {
        let bytes = Array(digits.utf8)
        let body = bytes.first == UInt8(ascii: "-") ? bytes.dropFirst() : bytes[...]
        guard let first = body.first, body.allSatisfy(isDigit) else { return false }
        return first != UInt8(ascii: "0") || body.count == 1
    }

    /// A double-quoted string: `\"`, `\\`, `\n`, `\t`, and `\uXXXX` for the other C0 and C1 control
    /// characters, DEL, and the line and paragraph separators; everything else as it is (UTF-8).
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            default:
                let value = scalar.value
                if value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029 {
                    let hex = String(value, radix: 16, uppercase: true)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        result += "\""
        return result
    }
}
