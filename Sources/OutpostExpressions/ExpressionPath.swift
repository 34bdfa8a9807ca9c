/// A dotted path such as `record.address.city`: a root chosen by the parser's caller, then keys
/// that walk into objects.
public struct ExpressionPath: Sendable, Hashable, CustomStringConvertible {
    /// The first name, e.g. `record`; one of the roots the expression was parsed with.
    public var root: String
    /// The names after the root, e.g. `["address", "city"]`.
    public var keys: [String]

    /// Creates a path from its root and keys.
    public init(root: String, keys: [String] = []) {
        self.root = root
        self.keys = keys
    }

    /// The root followed by the keys.
    public var components: [String] { [root] + keys }

    /// The names joined by dots, e.g. `record.address.city`.
    public var description: String { components.joined(separator: ".") }
}
