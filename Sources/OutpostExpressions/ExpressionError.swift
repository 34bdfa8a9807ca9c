/// The one error type of OutpostExpressions: source that does not parse or breaks a limit, or an
/// evaluation that ran out of budget.
///
/// Switch on ``code``; the set of codes may grow, so keep a `default` branch. ``message`` says
/// what went wrong and what to write instead, and ``position`` points into the source.
public struct ExpressionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. An open set: new codes may be added.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code's stable snake-case name, e.g. `unexpected_token`.
        public var rawValue: String

        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// A character that starts no token, such as `#` or a lone `=`.
        public static let unexpectedCharacter = Code(rawValue: "unexpected_character")
        /// A token where it cannot stand, such as `== ==` or a missing `)`.
        public static let unexpectedToken = Code(rawValue: "unexpected_token")
        /// A string without its closing `"`.
        public static let unterminatedString = Code(rawValue: "unterminated_string")
        /// A path whose root is not one of the roots allowed here.
        public static let unknownRoot = Code(rawValue: "unknown_root")
        /// The source is longer than ``ExpressionLimits/maxSourceBytes``.
        public static let tooLong = Code(rawValue: "too_long")
        /// The nesting is deeper than ``ExpressionLimits/maxDepth``.
        public static let tooDeep = Code(rawValue: "too_deep")
        /// More nodes than ``ExpressionLimits/maxNodes``.
        public static let tooManyNodes = Code(rawValue: "too_many_nodes")
        /// A list literal with more elements than ``ExpressionLimits/maxListElements``.
        public static let tooManyElements = Code(rawValue: "too_many_elements")
        /// A path with more names than ``ExpressionLimits/maxPathComponents``.
        public static let pathTooLong = Code(rawValue: "path_too_long")
        /// Evaluation took more steps than its budget.
        public static let evaluationBudgetExceeded = Code(rawValue: "evaluation_budget_exceeded")
        /// A malformed or out-of-range number, such as `01`, `1.` or `1e999`.
        public static let invalidNumber = Code(rawValue: "invalid_number")
        /// An unknown escape in a string, or a `\u` escape that is not a Unicode scalar.
        public static let invalidEscape = Code(rawValue: "invalid_escape")
        /// Comparisons written one after another, such as `a < b < c`.
        public static let chainedComparison = Code(rawValue: "chained_comparison")
        /// The source holds nothing but white space.
        public static let emptyExpression = Code(rawValue: "empty_expression")
    }

    /// Where in the source an error applies.
    public struct Position: Sendable, Hashable, CustomStringConvertible {
        /// The 0-based offset in UTF-8 bytes; the source's byte count means its end.
        public var offset: Int
        /// The 1-based column, counted in characters (grapheme clusters).
        public var column: Int

        /// Creates a position.
        public init(offset: Int, column: Int) {
            self.offset = offset
            self.column = column
        }

        /// The position of a UTF-8 byte offset in `source`: its column is that of the character
        /// holding the byte (one past the last character at the end).
        public init(offset: Int, in source: String) {
            var column = 1
            var consumed = 0
            for character in source {
                let width = character.utf8.count
                if consumed + width > offset { break }
                consumed += width
                column += 1
            }
            self.init(offset: offset, column: column)
        }

        public var description: String { "column \(column) (byte \(offset))" }
    }

    /// What went wrong.
    public var code: Code
    /// What went wrong and what to do, for people; it names the column when there is a position.
    public var message: String
    /// Where in the source; `nil` for evaluation errors, which concern the whole expression.
    public var position: Position?

    /// Creates an error; the library creates these, tests may too.
    public init(code: Code, message: String, position: Position? = nil) {
        self.code = code
        self.message = message
        self.position = position
    }

    /// The ``message``.
    public var description: String { message }
}
