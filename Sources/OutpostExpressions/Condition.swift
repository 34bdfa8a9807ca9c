/// A parsed expression of the Outpost expression language, such as
/// `record.owner == caller.user || "admin" in caller.roles`.
///
/// Parse once, evaluate many times: a `Condition` is an immutable value. Two expressions are equal
/// when their trees are, whatever spacing and redundant parentheses their sources had; ``description``
/// prints the canonical source, which parses back to an equal expression.
///
/// ```swift
/// let rule = try Condition(parsing: "record.owner == caller.user", roots: ["caller", "record"])
/// let allowed = rule.decide(in: ExpressionEnvironment(["caller": ["user": "u1"], "record": ["owner": "u1"]]))
/// ```
public struct Condition: Sendable, Hashable, CustomStringConvertible {
    /// The syntax tree.
    public var node: Node

    /// Parses `source`, accepting only paths whose first name is in `roots`.
    ///
    /// - Throws: ``ExpressionError`` with the position of the first problem, when the source does
    ///   not follow the grammar, names another root, or exceeds one of `limits`.
    public init(parsing source: String, roots: Set<String>, limits: ExpressionLimits = .init()) throws(ExpressionError) {
        node = try ExpressionParser.parse(source, roots: roots, limits: limits)
    }

    /// Wraps a tree built in code, such as a filter translated from query parameters.
    ///
    /// The tree is used as given: ``ExpressionLimits`` apply to parsed source only, and
    /// ``description`` parses back to it when its paths are made of identifiers and its numbers
    /// are finite.
    public init(_ node: Node) {
        self.node = node
    }

    /// The paths the expression reads, each once, in order of first appearance; a server can check
    /// that a filter reads only indexed fields.
    public var paths: [ExpressionPath] {
        var seen: Set<ExpressionPath> = []
        var result: [ExpressionPath] = []
        node.collectPaths(into: &result, seen: &seen)
        return result
    }

    /// The canonical source: single spaces around binary operators, `, ` between list elements,
    /// parentheses only where precedence needs them, numbers and strings in one spelling.
    public var description: String { node.description }
}

extension Condition.Node {
    fileprivate func collectPaths(into result: inout [ExpressionPath], seen: inout Set<ExpressionPath>) {
        switch self {
        case .null, .bool, .number, .string: break
        case .path(let path):
            if seen.insert(path).inserted { result.append(path) }
        case .list(let elements):
            for element in elements { element.collectPaths(into: &result, seen: &seen) }
        case .not(let operand):
            operand.collectPaths(into: &result, seen: &seen)
        case .binary(_, let left, let right):
            left.collectPaths(into: &result, seen: &seen)
            right.collectPaths(into: &result, seen: &seen)
        }
    }
}
