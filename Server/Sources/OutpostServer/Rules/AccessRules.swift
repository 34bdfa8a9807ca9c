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

    private static let parsedDefaults = parsed(defaults, type: "*")

    /// Built-in rules, parsed. They are constants that parse (`false`, denying, would stand in for
    /// one that did not).
    private static func parsed(_ sources: [RuleOperation: String], type: String) -> [RuleOperation: AccessRule] {
        Dictionary(
            uniqueKeysWithValues: sources.map { operation, source in
                let condition = (try? parse(source, type: type)) ?? Condition(.bool(false))
                return (operation, AccessRule(type: nil, operation: operation, condition: condition, source: source))
            })
    }

    /// The entry that holds the rules of files (`/files/{name}`): `@files` in storage and on the
    /// command line, the top-level `files` object in a rules file. No record type has that name,
    /// and `*` does not apply to files.
    public static let filesType = "@files"

    /// The operations a rule decides on files: reading (downloading), creating a name, replacing
    /// a file's bytes, deleting it.
    public static let fileOperations: [RuleOperation] = [.read, .create, .update, .delete]

    /// The roots a file's rule may read: `caller`, `file` (`name`, `owner`, `size`,
    /// `content_type`, `sha256`, `updated_at`), and `request` (`content_type`, `size`) on create
    /// and update.
    public static let fileRoots: Set<String> = ["caller", "file", "request"]

    /// The built-in rule of each file operation: everyone downloads; a signed-in user creates (a
    /// file belongs to a user); only its owner replaces or deletes it.
    public static let fileDefaults: [RuleOperation: String] = [
        .read: "true",
        .create: "caller.user != null",
        .update: "file.owner != null && file.owner == caller.user",
        .delete: "file.owner != null && file.owner == caller.user",
    ]

    private static let parsedFileDefaults = parsed(fileDefaults, type: filesType)

    /// The rules by type (`*` and `@files` included), then operation.
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
            if rule.type == Self.filesType && !Self.fileOperations.contains(operation) {
                invalid.append((rule, RuleError.unknownFileOperation(rule.operation)))
                continue
            }
            let condition: Condition
            do {
                condition = try Self.parse(rule.expression, type: rule.type)
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

    /// Parses the expression of a rule of `type`: a file's rule (``filesType``) reads
    /// ``fileRoots``, a record type's ``roots``.
    public static func parse(_ source: String, type: String) throws(ExpressionError) -> Condition {
        try Condition(parsing: source, roots: type == filesType ? fileRoots : roots)
    }

    /// The rule that decides `operation` on records of `type`: the type's own, else `*`'s, else the
    /// default. For ``filesType``, the files' own rule, else the file default (`*` does not apply;
    /// an operation files do not have is decided by `false`).
    public func rule(for type: String, _ operation: RuleOperation) -> AccessRule {
        if type == Self.filesType {
            return entries[type]?[operation] ?? Self.parsedFileDefaults[operation]
                ?? AccessRule(type: type, operation: operation, condition: Condition(.bool(false)), source: "false")
        }
        return entries[type]?[operation] ?? entries["*"]?[operation] ?? Self.parsedDefaults[operation]!
    }

    /// The environment a file's rule is evaluated in: `caller`, `file`, and `request` (on create
    /// and update).
    public static func fileEnvironment(caller: RuleCaller, file: ExpressionValue, request: ExpressionValue = .null)
        -> ExpressionEnvironment
    {
        var roots: [String: ExpressionValue] = ["caller": caller.value, "file": file]
        if request != .null { roots["request"] = request }
        return ExpressionEnvironment(roots)
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
    case unknownFileOperation(String)
    case invalidType(String)

    public var description: String {
        switch self {
        case .unknownOperation(let name):
            "'\(name)' is not an operation a rule decides; use one of: "
                + RuleOperation.allCases.map(\.rawValue).joined(separator: ", ")
        case .unknownFileOperation(let name):
            "'\(name)' is not an operation a rule decides on files; use one of: "
                + fileOperationNames
        case .invalidType(let name):
            "'\(name)' is not a record type: use 1–64 letters, digits, '_' or '-', * for every type without its own rules, "
                + "or @files for files"
        }
    }

    private var fileOperationNames: String {
        AccessRules.fileOperations.map(\.rawValue).joined(separator: ", ")
    }
}
