public import Foundation
@_spi(OutpostInternal) import OutpostCore
public import OutpostExpressions

/// A whole set of access rules, as `outpost serve --rules FILE` reads it:
///
/// ```json
/// {"types": {"posts": {"read": "record.status == \"published\" || record.owner == caller.user"},
///            "*": {"create": "caller.signed_in"}},
///  "files": {"read": "caller.signed_in"}}
/// ```
///
/// `files` holds the rules of `/files` (``AccessRules/filesType`` in ``types``). A type may also
/// declare indexes for its lists, each a list of 1–3 field names (``RecordIndex``):
/// `"posts": {"read": "…", "indexes": [["views"], ["tag", "title"]]}`.
///
/// Every expression is checked when the set is made, so a bad one stops the server before it
/// serves anything.
public struct AccessRuleSet: Sendable, Hashable {
    /// Expressions by record type (or `*`), then operation.
    public private(set) var types: [String: [RuleOperation: String]]
    /// Indexes to build at start (``RecordIndex``), in the order the file names them.
    public private(set) var indexes: [RecordIndex] = []

    /// No rules: every type has the defaults.
    public init() {
        types = [:]
    }

    /// A set from expressions, each checked with ``validate(type:operation:expression:)``.
    public init(_ types: [String: [String: String]]) throws(AccessRuleError) {
        var checked: [String: [RuleOperation: String]] = [:]
        for (type, rules) in types.sorted(by: { $0.key < $1.key }) {
            checked[type] = [:]
            for (operation, expression) in rules.sorted(by: { $0.key < $1.key }) {
                let parsed = try Self.validate(type: type, operation: operation, expression: expression)
                checked[type]![parsed] = expression
            }
        }
        self.types = checked
    }

    /// Reads a rules file; errors name the file, the type, the operation and the column.
    public init(contentsOf path: String) throws(AccessRuleError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw AccessRuleError(message: "\(path): cannot be read (\(error.localizedDescription))")
        }
        self = try AccessRuleSet(json: data, file: path)
    }

    /// Parses `{"types": {"TYPE": {"OPERATION": "EXPRESSION", …}, …}, "files": {"OPERATION": "EXPRESSION", …}}`
    /// (either key may be left out).
    public init(json data: Data, file: String = "rules") throws(AccessRuleError) {
        let shape =
            #"{"types": {"TYPE": {"read": "EXPRESSION", "create": "EXPRESSION", …}, "*": {…}}, "files": {"read": "EXPRESSION", …}}"#
        guard let value = try? JSONValue(parsing: data), case .object(let top) = value, !top.isEmpty,
            top.keys.allSatisfy({ $0 == "types" || $0 == "files" })
        else {
            throw AccessRuleError(message: "\(file): not a rules file; write JSON shaped \(shape)")
        }
        var entries: [(path: String, type: String, rules: JSONValue)] = []
        if let types = top["types"] {
            guard case .object(let types) = types else {
                throw AccessRuleError(
                    message: "\(file): types must be an object of record type to rules; write JSON shaped \(shape)")
            }
            entries += types.map { ("types.\($0.key)", $0.key, $0.value) }
        }
        if let files = top["files"] { entries.append(("files", AccessRules.filesType, files)) }
        var result: [String: [String: String]] = [:]
        var indexes: [RecordIndex] = []
        for (path, type, entry) in entries.sorted(by: { $0.path < $1.path }) {
            guard case .object(var rules) = entry else {
                throw AccessRuleError(message: "\(file): \(path) must be an object of operation to expression")
            }
            if let declared = rules.removeValue(forKey: "indexes") {
                indexes += try Self.indexes(declared, type: type, path: "\(file): \(path).indexes")
            }
            for (operation, expression) in rules {
                guard case .string(let text) = expression else {
                    throw AccessRuleError(message: "\(file): \(path).\(operation) must be a string holding an expression")
                }
                result[type, default: [:]][operation] = text
            }
        }
        do {
            self = try AccessRuleSet(result)
            self.indexes = indexes
        } catch {
            throw AccessRuleError(
                message: "\(file): \(error.message)", type: error.type, operation: error.operation,
                expressionError: error.expressionError)
        }
    }

    /// The indexes a type declares: `[["views"], ["tag", "title"]]`.
    static func indexes(_ value: JSONValue, type: String, path: String) throws(AccessRuleError) -> [RecordIndex] {
        let shape = #"write a list of indexes, each a list of 1–3 field names, e.g. [["views"], ["tag", "title"]]"#
        guard type != "*", type != AccessRules.filesType else {
            throw AccessRuleError(message: "\(path): indexes belong to a record type, not to \(type)", type: type)
        }
        guard case .array(let entries) = value, entries.count <= RecordIndex.maxPerType else {
            throw AccessRuleError(message: "\(path): \(shape) (at most \(RecordIndex.maxPerType))", type: type)
        }
        var indexes: [RecordIndex] = []
        for entry in entries {
            guard case .array(let names) = entry else { throw AccessRuleError(message: "\(path): \(shape)", type: type) }
            var fields: [String] = []
            for name in names {
                guard case .string(let field) = name else { throw AccessRuleError(message: "\(path): \(shape)", type: type) }
                fields.append(field)
            }
            do {
                indexes.append(try RecordIndex(type: type, fields: fields))
            } catch {
                throw AccessRuleError(message: "\(path): \(error.message)", type: type)
            }
        }
        return indexes
    }

    /// Checks one rule: the type is a record type name or `*`, the operation is known, the
    /// expression parses with the roots rules read, and a `list` or `read` rule can select records
    /// in a list query (``RecordPredicate``).
    ///
    /// The rules of files (type ``AccessRules/filesType``) decide read, create, update and delete,
    /// and read the roots ``AccessRules/fileRoots``.
    @discardableResult
    public static func validate(type: String, operation: String, expression: String) throws(AccessRuleError) -> RuleOperation {
        if type == AccessRules.filesType { return try validateFileRule(operation: operation, expression: expression) }
        guard type == "*" || RecordRoutes.isValidName(type) else {
            throw AccessRuleError(
                message: "types.\(type): \(RuleError.invalidType(type).description)", type: type, operation: operation)
        }
        guard let parsed = RuleOperation(rawValue: operation) else {
            throw AccessRuleError(
                message: "types.\(type).\(operation): \(RuleError.unknownOperation(operation).description)", type: type,
                operation: operation)
        }
        let condition: Condition
        do {
            condition = try AccessRules.parse(expression)
        } catch {
            // The expression error's message names the column.
            throw AccessRuleError(
                message: "types.\(type).\(operation): \(error.message) (\(error.code))", type: type,
                operation: operation, expressionError: error)
        }
        if parsed == .list || parsed == .read {
            // Whether it compiles depends on the shape, not on who calls: try a signed-in caller.
            let sample = RuleCaller(signedIn: true, user: "u", client: "c", scopes: [], roles: [])
            do {
                _ = try RecordPredicate.compile(condition, caller: sample)
            } catch {
                throw AccessRuleError(
                    message: "types.\(type).\(operation): \(error.description)", type: type, operation: operation)
            }
        }
        return parsed
    }

    static func validateFileRule(operation: String, expression: String) throws(AccessRuleError) -> RuleOperation {
        let type = AccessRules.filesType
        guard let parsed = RuleOperation(rawValue: operation), AccessRules.fileOperations.contains(parsed) else {
            throw AccessRuleError(
                message: "files.\(operation): \(RuleError.unknownFileOperation(operation).description)", type: type,
                operation: operation)
        }
        do {
            _ = try AccessRules.parse(expression, type: type)
        } catch {
            throw AccessRuleError(
                message: "files.\(operation): \(error.message) (\(error.code))", type: type, operation: operation,
                expressionError: error)
        }
        return parsed
    }

    /// Builds ``indexes`` that do not exist yet (declared indexes the set does not name stay;
    /// `outpost types drop-index` drops one).
    ///
    /// - Parameter storage: The storage to build them in.
    public func buildIndexes(in storage: any RecordIndexStorage) async throws {
        for index in indexes { try await storage.createRecordIndex(index) }
    }

    /// Makes storage hold exactly this set: the rules of every type it names are replaced, and
    /// types it does not name lose their rules.
    public func store(in storage: any RuleStorage) async throws {
        for stored in Set(try await storage.rules().map(\.type)) where types[stored] == nil {
            try await storage.setRules(type: stored, [:])
        }
        for (type, rules) in types.sorted(by: { $0.key < $1.key }) {
            try await storage.setRules(
                type: type, Dictionary(uniqueKeysWithValues: rules.map { ($0.key.rawValue, $0.value) }))
        }
    }
}

/// A rule that cannot be used: what is wrong and where.
public struct AccessRuleError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var type: String?
    public var operation: String?
    /// The expression's own error, with its code and position, when the expression is at fault.
    public var expressionError: ExpressionError?

    public init(message: String, type: String? = nil, operation: String? = nil, expressionError: ExpressionError? = nil) {
        self.message = message
        self.type = type
        self.operation = operation
        self.expressionError = expressionError
    }

    public var description: String { message }
}
