/// One access rule as stored: an expression of the OutpostExpressions language that decides
/// whether a caller may perform `operation` on records of `type` (`*` for every type without a
/// rule of its own).
public struct StoredRule: Sendable, Hashable {
    public var type: String
    /// `list`, `read`, `create`, `update`, `delete` or `subscribe` (``RuleOperation``).
    public var operation: String
    public var expression: String
    /// Milliseconds since 1970 of the last change.
    public var updatedAt: Int64

    public init(type: String, operation: String, expression: String, updatedAt: Int64) {
        self.type = type
        self.operation = operation
        self.expression = expression
        self.updatedAt = updatedAt
    }
}

/// Access rules per record type and operation, and users' roles. Both live in storage, so every
/// instance on one database decides alike. The storage does not parse expressions: the caller
/// (``AccessRules``, the CLI) validates them before writing.
public protocol RuleStorage: Sendable {
    /// Every stored rule, ordered by type and operation.
    func rules() async throws -> [StoredRule]
    /// Replaces every rule of `type` with `rules` (operation to expression) in one transaction; an
    /// empty dictionary removes the type's rules.
    func setRules(type: String, _ rules: [String: String]) async throws
    /// Sets one rule, replacing the one of the same type and operation.
    func setRule(type: String, operation: String, expression: String) async throws
    /// Removes one rule; `false` when there was none.
    func removeRule(type: String, operation: String) async throws -> Bool

    /// Gives a user a role (nothing happens when the user has it already).
    func addRole(_ role: String, userID: String) async throws
    /// Takes a role from a user; `false` when the user did not have it.
    func removeRole(_ role: String, userID: String) async throws -> Bool
    /// A user's roles, sorted.
    func roles(userID: String) async throws -> [String]
}
