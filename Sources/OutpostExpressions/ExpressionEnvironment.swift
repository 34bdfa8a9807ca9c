/// An ``ExpressionContext`` over a value per root, walking into objects key by key.
///
/// ```swift
/// let environment = ExpressionEnvironment([
///     "caller": ["user": "u1", "roles": ["editor"]],
///     "record": ["owner": "u1", "address": ["city": "Lyon"]],
/// ])
/// ```
public struct ExpressionEnvironment: ExpressionContext, Hashable {
    /// The value of each root, by name.
    public var roots: [String: ExpressionValue]

    /// Creates an environment with the given roots.
    public init(_ roots: [String: ExpressionValue] = [:]) {
        self.roots = roots
    }

    /// The root's value, then each key looked up in the object reached so far; ``ExpressionValue/null``
    /// when the root is absent, a key is missing, or a value on the way is not an object.
    public func value(at path: ExpressionPath) -> ExpressionValue {
        guard var current = roots[path.root] else { return .null }
        for key in path.keys {
            guard case .object(let fields) = current, let next = fields[key] else { return .null }
            current = next
        }
        return current
    }
}
