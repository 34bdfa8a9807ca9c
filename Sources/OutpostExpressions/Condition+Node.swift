extension Condition {
    /// A node of the syntax tree. Public so that other modules can translate expressions, e.g. a
    /// list filter into SQL.
    public indirect enum Node: Sendable, Hashable, CustomStringConvertible {
        /// `null`.
        case null
        /// `true` or `false`.
        case bool(Bool)
        /// A number literal; always finite when parsed.
        case number(Double)
        /// A string literal, escapes resolved.
        case string(String)
        /// A path such as `record.status`.
        case path(ExpressionPath)
        /// A list literal such as `["a", "b", 1]`; elements may be any expression.
        case list([Node])
        /// `!operand`.
        case not(Node)
        /// `left op right`.
        case binary(BinaryOperator, Node, Node)

        /// The canonical source of this node, as in ``Condition/description``.
        public var description: String {
            var output = ""
            write(to: &output)
            return output
        }
    }

    /// An operator between two operands, from tightest to loosest: comparisons, `&&`, `||`.
    public enum BinaryOperator: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `==`: same type and value (arrays and objects element by element).
        case equal = "=="
        /// `!=`: not `==`.
        case notEqual = "!="
        /// `<` on two numbers or two strings; false otherwise.
        case less = "<"
        /// `<=` on two numbers or two strings; false otherwise.
        case lessOrEqual = "<="
        /// `>` on two numbers or two strings; false otherwise.
        case greater = ">"
        /// `>=` on two numbers or two strings; false otherwise.
        case greaterOrEqual = ">="
        /// `in`: the left value `==` an element of the array on the right; false when the right is
        /// not an array.
        case `in` = "in"
        /// `^=`: the left string starts with the right string; false unless both are strings.
        case startsWith = "^="
        /// `&&`: both operands are `true`; the right is not evaluated when the left is not `true`.
        case and = "&&"
        /// `||`: an operand is `true`; the right is not evaluated when the left is `true`.
        case or = "||"

        /// The operator as written in source.
        public var description: String { rawValue }

        /// Whether this is one of the non-associative comparison operators, `in` and `^=` included.
        public var isComparison: Bool { self != .and && self != .or }

        /// Binding strength: `||` 1, `&&` 2, comparisons 3 (`!` is 4, values 5).
        var precedence: Int {
            switch self {
            case .or: 1
            case .and: 2
            default: 3
            }
        }
    }
}

extension Condition.Node {
    /// Binding strength of this node as an operand (see ``Condition/BinaryOperator``).
    var precedence: Int {
        switch self {
        case .binary(let op, _, _): op.precedence
        case .not: 4
        default: 5
        }
    }

    func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .number(let number): output += ExpressionText.number(number)
        case .string(let text): output += ExpressionText.quoted(text)
        case .path(let path): output += path.description
        case .list(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += ", " }
                element.write(to: &output)
            }
            output += "]"
        case .not(let operand):
            output += "!"
            operand.write(to: &output, parenthesizedBelow: 4)
        case .binary(let op, let left, let right):
            // Left-associative `&&` and `||` take a left operand of their own precedence bare;
            // comparisons do not chain, so both of their operands must bind tighter.
            let leftMinimum = op.isComparison ? op.precedence + 1 : op.precedence
            left.write(to: &output, parenthesizedBelow: leftMinimum)
            output += " \(op.rawValue) "
            right.write(to: &output, parenthesizedBelow: op.precedence + 1)
        }
    }

    private func write(to output: inout String, parenthesizedBelow minimum: Int) {
        if precedence < minimum {
            output += "("
            write(to: &output)
            output += ")"
        } else {
            write(to: &output)
        }
    }
}
