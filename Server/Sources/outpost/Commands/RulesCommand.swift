import ArgumentParser
import Foundation
import Outpost
import OutpostExpressions
import OutpostServer

struct RulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Show, set, clear and try out the access rules of record types (works on the database directly).",
        discussion: """
            A rule is an expression (docs/PROTOCOL.md, "Expressions") that decides one operation on the records of a type:
            \(RuleOperation.allCases.map(\.rawValue).joined(separator: ", ")). Type * applies to every type without its own rule.
            Type @files holds the rules of /files: \(AccessRules.fileOperations.map(\.rawValue).joined(separator: ", ")), reading
            caller, file (name, owner, size, content_type, sha256, updated_at) and request (content_type, size).
            Running servers pick up a change within a second.
              outpost rules set posts read 'record.status == "published" || record.owner == caller.user'
              outpost rules set '*' create 'caller.signed_in'
              outpost rules set @files read 'caller.signed_in'
              outpost rules check posts read --caller '{"user": "u1"}' --record '{"owner": "u2", "status": "draft"}'
            """,
        subcommands: [Show.self, Set.self, Clear.self, Check.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the stored rules, then the defaults that apply where no rule is set.")
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let rules = try await options.withStorage { try await $0.rules() }
            print(Self.text(rules), terminator: "")
        }

        static func text(_ rules: [StoredRule]) -> String {
            var text = rules.isEmpty ? "No rules are set; the defaults apply to every type.\n" : ""
            for rule in rules { text += "\(rule.type).\(rule.operation): \(rule.expression)\n" }
            text += "Defaults (where neither the type nor * has a rule):\n"
            for operation in RuleOperation.allCases {
                text += "  \(operation.rawValue): \(AccessRules.defaults[operation]!)\n"
            }
            text += "File defaults (where @files has no rule):\n"
            for operation in AccessRules.fileOperations {
                text += "  \(operation.rawValue): \(AccessRules.fileDefaults[operation]!)\n"
            }
            return text
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set one rule, replacing the one there was.")
        @Argument(help: "A record type, * for every type without its own rule, or @files for files.") var type: String
        @Argument(help: "list, read, create, update, delete or subscribe (files: read, create, update, delete).")
        var operation: String
        @Argument(help: "The expression, e.g. 'record.owner == caller.user'.") var expression: String
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            do {
                try AccessRuleSet.validate(type: type, operation: operation, expression: expression)
            } catch {
                throw ValidationError(error.message)
            }
        }

        func run() async throws {
            try await options.withStorage { storage in
                try await storage.setRule(type: type, operation: operation, expression: expression)
                await OperatorAudit.record(
                    storage, AuditAction.ruleChanged, subject: type,
                    detail: ["operation": operation, "change": "set", "expression": expression])
            }
            print("\(type).\(operation): \(expression)")
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove one rule (the type's * rule or the default applies again), or all of a type's rules.")
        @Argument(help: "A record type, *, or @files.") var type: String
        @Argument(help: "The operation; without it, every rule of the type.") var operation: String?
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            if let operation {
                let removed = try await options.withStorage { storage in
                    let removed = try await storage.removeRule(type: type, operation: operation)
                    if removed {
                        await OperatorAudit.record(
                            storage, AuditAction.ruleChanged, subject: type,
                            detail: ["operation": operation, "change": "cleared"])
                    }
                    return removed
                }
                guard removed else {
                    FileHandle.standardError.write(
                        Data("error: no rule \(type).\(operation); `outpost rules show` lists them\n".utf8))
                    throw ExitCode.failure
                }
                print("removed \(type).\(operation)")
            } else {
                try await options.withStorage { storage in
                    try await storage.setRules(type: type, [:])
                    await OperatorAudit.record(storage, AuditAction.ruleChanged, subject: type, detail: ["change": "cleared"])
                }
                print("removed every rule of \(type)")
            }
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decide one operation for a caller and a record under the stored rules, and explain the decision.",
            discussion: """
                --caller takes {"signed_in", "user", "client", "scopes", "roles"}; signed_in defaults to whether user or
                client is set, scopes and roles to []. --record takes the record's fields with id, owner, private,
                created_at and updated_at; for type @files, the file (name, owner, size, content_type, sha256,
                updated_at), and --body the request (content_type, size). Exits 0 when the rule allows, 1 when it denies.
                  outpost rules check posts update --caller '{"user": "u1", "roles": ["editor"]}' --record '{"owner": "u2"}' --body '{"title": "x"}'
                """)
        @Argument(help: "The record type, or @files.") var type: String
        @Argument(help: "list, read, create, update, delete or subscribe.") var operation: String
        @Option(help: "The caller as JSON.") var caller: String = "{}"
        @Option(help: "The record as JSON.") var record: String = "{}"
        @Option(help: "The request body as JSON (create and update).") var body: String?
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let (allowed, text) = try await options.withStorage { try report(try await $0.rules()) }
            print(text, terminator: "")
            if !allowed { throw ExitCode.failure }
        }

        /// The decision and what to print, under `stored` rules.
        func report(_ stored: [StoredRule]) throws -> (allowed: Bool, text: String) {
            guard let operation = RuleOperation(rawValue: self.operation) else {
                throw ValidationError(RuleError.unknownOperation(self.operation).description)
            }
            if type == AccessRules.filesType && !AccessRules.fileOperations.contains(operation) {
                throw ValidationError(RuleError.unknownFileOperation(self.operation).description)
            }
            let rules = AccessRules(stored)
            let rule = rules.rule(for: type, operation)
            let ruleCaller = try Self.caller(try Self.json(caller, "--caller"))
            let subject = try Self.json(record, "--record")
            let request = try body.map { try Self.json($0, "--body") } ?? .null
            let environment =
                type == AccessRules.filesType
                ? AccessRules.fileEnvironment(caller: ruleCaller, file: subject, request: request)
                : AccessRules.environment(caller: ruleCaller, record: subject, body: request)
            let explanation = rule.condition.explain(in: environment)
            let origin = rule.isDefault ? "the default \(operation.rawValue) rule" : "rule \(rule.name)"
            var text = "\(explanation.decision ? "allow" : "deny") by \(origin): \(rule.source)\n"
            text += explanation.description + "\n"
            return (explanation.decision, text)
        }

        static func json(_ text: String, _ option: String) throws -> ExpressionValue {
            guard let value = try? JSONValue(parsing: Data(text.utf8)), case .object = value else {
                throw ValidationError("\(option) must be a JSON object, e.g. {\"user\": \"u1\"}")
            }
            return ExpressionValue(value)
        }

        /// The caller as the server makes it: every key present.
        static func caller(_ value: ExpressionValue) throws -> RuleCaller {
            guard case .object(let fields) = value else { return .anonymous }
            func string(_ key: String) throws -> String? {
                switch fields[key] {
                case nil, .null?: return nil
                case .string(let text)?: return text
                default: throw ValidationError("--caller: \(key) must be a string or null")
                }
            }
            func strings(_ key: String) throws -> [String] {
                switch fields[key] {
                case nil: return []
                case .array(let elements)?:
                    return try elements.map {
                        guard case .string(let text) = $0 else {
                            throw ValidationError("--caller: \(key) must be an array of strings")
                        }
                        return text
                    }
                default: throw ValidationError("--caller: \(key) must be an array of strings")
                }
            }
            let user = try string("user")
            let client = try string("client")
            let signedIn: Bool
            switch fields["signed_in"] {
            case nil: signedIn = user != nil || client != nil
            case .bool(let flag)?: signedIn = flag
            default: throw ValidationError("--caller: signed_in must be true or false")
            }
            return RuleCaller(
                signedIn: signedIn, user: user, client: client, scopes: try strings("scopes"), roles: try strings("roles"))
        }
    }
}

struct RolesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "role", abstract: "Give users roles, which access rules read as caller.roles.",
        subcommands: [Add.self, Remove.self, List.self])

    static func user(_ username: String, in storage: any Storage) async throws -> StoredUser {
        guard let user = try await storage.user(username: username) else {
            throw ValidationError("No user '\(username)'; add one with `outpost users add`")
        }
        return user
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Give a user a role.")
        @Argument var username: String
        @Argument var role: String
        @OptionGroup var options: DatabaseOptions

        func validate() throws {
            guard RoleName.isValid(role) else { throw ValidationError(RoleName.help) }
        }

        func run() async throws {
            try await options.withStorage { storage in
                let user = try await RolesCommand.user(username, in: storage)
                try await storage.addRole(role, userID: user.id)
                await OperatorAudit.record(
                    storage, AuditAction.userRolesChanged, subject: user.id, detail: ["added": role])
                print("\(user.username): \(try await storage.roles(userID: user.id).joined(separator: ", "))")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take a role from a user.")
        @Argument var username: String
        @Argument var role: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                let user = try await RolesCommand.user(username, in: storage)
                guard try await storage.removeRole(role, userID: user.id) else {
                    throw ValidationError("\(user.username) does not have the role '\(role)'")
                }
                await OperatorAudit.record(
                    storage, AuditAction.userRolesChanged, subject: user.id, detail: ["removed": role])
                let roles = try await storage.roles(userID: user.id)
                print("\(user.username): \(roles.isEmpty ? "no roles" : roles.joined(separator: ", "))")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a user's roles.")
        @Argument var username: String
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await options.withStorage { storage in
                let user = try await RolesCommand.user(username, in: storage)
                let roles = try await storage.roles(userID: user.id)
                print("\(user.username): \(roles.isEmpty ? "no roles" : roles.joined(separator: ", "))")
            }
        }
    }
}
