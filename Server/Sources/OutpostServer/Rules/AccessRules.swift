public import OutpostExpressions

/// What a rule decides about records of a type.
public enum RuleOperation: String, Sendable, CaseIterable, Hashable {
    case list, read, create, update, delete, subscribe
}

/// One rule in force: the expression that decides `operation` on records of a type, and where it
/// came from (the type's own entry, the `*` entry, or the built-in default).
public struct AccessRule: Sendable, Hashable {
    /// The entry the rule came from: the record type, `*`, or `nil` for the built-in default.
    public var type: String?
    public var operation: RuleOperation
    public var condition: Condition
    /// The expression as written.
    public var source: String

    /// Whether the rule reads the record's fields, not only the keys the server owns (`id`,
    /// `owner`, `private`, `created_at`, `updated_at`): when it does not, the record's stored text
    /// need not be parsed to decide.
    public var readsFields: Bool {
        condition.paths.contains { path in
            path.root == "record" && (path.keys.first.map { !Self.serverKeys.contains($0) } ?? true)
        }
    }

    /// The keys of a rule's `record` that the server owns.
    static let serverKeys: Set<String> = ["id", "owner", "private", "created_at", "updated_at"]

    /// `type.operation` as an error's `details.rule` names it: `posts.update`, `*.create`, or
    /// `default.create` for the built-in default.
    public var name: String { "\(type ?? "default").\(operation.rawValue)" }

    public var isDefault: Bool { type == nil }
}

/// The access rules in force: an expression per record type and operation, with `*` for types
/// without their own entry and the built-in defaults below for operations no entry names.
///
/// The defaults keep a fresh server safe to expose: only a signed-in caller creates; only a
/// record's owner updates or deletes it (a record without an owner is changed by no one unless a
/// rule says so); everyone reads, lists and subscribes to public records, and only their owner to
/// private ones.
///
/// Rules read three roots: `caller` (`signed_in`, `user`, `client`, `scopes`, `roles`), `record`
/// (`id`, `owner`, `private`, `created_at`, `updated_at` and the record's fields by name) and
/// `request` (`body`, on create and update).
public struct AccessRules: Sendable {
    /// The roots a rule may read.
    public static let roots: Set<String> = ["caller", "record", "request"]

    /// The built-in rule of each operation.
    public static let defaults: [RuleOperation: String] = [
        .create: "caller.signed_in",
        .update: "record.owner != null && record.owner == caller.user",
        .delete: "record.owner != null && record.owner == caller.user",
        .read: "record.private != true || record.owner == caller.user",
        .list: "record.private != true || record.owner == caller.user",
        .subscribe: "record.private != true || record.owner == caller.user",
    ]

    private static let parsedDefaults: [RuleOperation: AccessRule] = Dictionary(
        uniqueKeysWithValues: defaults.map { operation, source in
            // The defaults are constants that parse (`false`, denying, would stand in for one that did not).
            let condition = (try? parse(source)) ?? Condition(.bool(false))
            return (operation, AccessRule(type: nil, operation: operation, condition: condition, source: source))
        })

    /// The rules by type (`*` included), then operation.
    public private(set) var entries: [String: [RuleOperation: AccessRule]] = [:]

    /// No rules: every decision is the default's.
    public init() {}

    /// Rules from storage. A stored rule that no longer parses (written around the server's checks)
    /// is kept as `false`, so it denies rather than falls back to something more permissive; its
    /// error is in `invalid`.
    public init(_ stored: [StoredRule]) {
        var invalid: [(rule: StoredRule, error: any Error)] = []
        self.init(stored, invalid: &invalid)
    }

    public init(_ stored: [StoredRule], invalid: inout [(rule: StoredRule, error: any Error)]) {
        for rule in stored {
            guard let operation = RuleOperation(rawValue: rule.operation) else {
                invalid.append((rule, RuleError.unknownOperation(rule.operation)))
                continue
            }
            let condition: Condition
            do {
                condition = try Self.parse(rule.expression)
            } catch {
                invalid.append((rule, error))
                condition = Condition(.bool(false))
            }
            entries[rule.type, default: [:]][operation] = AccessRule(
                type: rule.type, operation: operation, condition: condition, source: rule.expression)
        }
    }

    /// Parses a rule's expression with the roots rules read.
    public static func parse(_ source: String) throws(ExpressionError) -> Condition {
        try Condition(parsing: source, roots: roots)
    }

    /// The rule that decides `operation` on records of `type`: the type's own, else `*`'s, else the
    /// default.
    public func rule(for type: String, _ operation: RuleOperation) -> AccessRule {
        entries[type]?[operation] ?? entries["*"]?[operation] ?? Self.parsedDefaults[operation]!
    }

    /// Whether `caller` may perform `operation` on `record` (with `body` for create and update).
    public func allows(
        _ operation: RuleOperation, type: String, caller: RuleCaller, record: ExpressionValue, body: ExpressionValue = .null
    ) -> Bool {
        rule(for: type, operation).condition.decide(in: Self.environment(caller: caller, record: record, body: body))
    }

    /// The environment a rule is evaluated in.
    public static func environment(caller: RuleCaller, record: ExpressionValue, body: ExpressionValue = .null)
        -> ExpressionEnvironment
    {
        var roots: [String: ExpressionValue] = ["caller": caller.value, "record": record]
        if body != .null { roots["request"] = ["body": body] }
        return ExpressionEnvironment(roots)
    }
}

/// A rule that cannot be used, as the CLI and `--rules` report it.
public enum RuleError: Error, Sendable, CustomStringConvertible {
    case unknownOperation(String)
    case invalidType(String)

    public var description: String {
        switch self {
        case .unknownOperation(let name):
            "'\(name)' is not an operation a rule decides; use one of: "
                + RuleOperation.allCases.map(\.rawValue).joined(separator: ", ")
        case .invalidType(let name):
            "'\(name)' is not a record type: use 1–64 letters, digits, '_' or '-', or * for every type without its own rules"
        }
    }
}
