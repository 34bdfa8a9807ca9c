/// How an expression reached its decision: its value and the value of each operator evaluated,
/// outermost first. Bounded: at most 100 steps, each source and value shortened with `…`.
///
/// Its ``description`` reads like this:
///
/// ```
/// deny
/// record.owner == caller.user || "admin" in caller.roles → false || false → false
///   record.owner == caller.user → "u1" == "u2" → false
///   "admin" in caller.roles → "admin" in ["editor"] → false
/// ```
public struct ExpressionExplanation: Sendable, Hashable, CustomStringConvertible {
    /// One evaluated sub-expression.
    public struct Step: Sendable, Hashable, CustomStringConvertible {
        /// Depth in the syntax tree, the whole expression being 0.
        public var level: Int
        /// The sub-expression's canonical source.
        public var expression: String
        /// The operator applied to its operands' values, e.g. `"u1" == "u2"`; `…` stands for an
        /// operand that was not evaluated. `nil` for a value that is the whole expression.
        public var operands: String?
        /// The result; `nil` when evaluation stopped before it finished.
        public var value: ExpressionValue?

        /// Creates a step.
        public init(level: Int, expression: String, operands: String?, value: ExpressionValue?) {
            self.level = level
            self.expression = expression
            self.operands = operands
            self.value = value
        }

        /// `expression → operands → value`, indented two spaces per level.
        public var description: String {
            var line = String(repeating: "  ", count: level) + expression
            if let operands { line += " → " + operands }
            line += " → " + (value.map { ExpressionTrace.render($0) } ?? "(not finished)")
            return line
        }
    }

    /// What ``Condition/decide(in:budget:)`` answers: `true` only for a value of exactly `true`.
    public var decision: Bool
    /// The expression's value; `nil` when evaluation failed.
    public var value: ExpressionValue?
    /// Why evaluation failed, such as an exceeded budget.
    public var error: ExpressionError?
    /// The steps, outermost first.
    public var steps: [Step]
    /// Steps evaluated past the limit and left out.
    public var omittedSteps: Int

    /// Creates an explanation.
    public init(decision: Bool, value: ExpressionValue?, error: ExpressionError?, steps: [Step], omittedSteps: Int) {
        self.decision = decision
        self.value = value
        self.error = error
        self.steps = steps
        self.omittedSteps = omittedSteps
    }

    /// `allow` or `deny` (with the error, if any), then one line per step.
    public var description: String {
        var lines = [decision ? "allow" : "deny"]
        if let error { lines[0] += ": " + error.message }
        lines += steps.map(\.description)
        if omittedSteps > 0 { lines.append("… \(omittedSteps) more steps") }
        return lines.joined(separator: "\n")
    }
}
