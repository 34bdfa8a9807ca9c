@_spi(OutpostInternal) import OutpostCore
import OutpostExpressions

extension AdminConsole {
    /// An operation on a record tried for a caller under the rules in force, decided as the record
    /// routes decide it: the same rules (``AccessRules/rule(for:_:)``), the same environment
    /// (``AccessRules/environment(caller:record:body:)``), the same evaluator (an explanation is
    /// ``Condition/decide(in:budget:)`` with each step recorded) and the same refusal
    /// (``RecordRoutes/refusal(_:type:caller:noun:)``).
    struct RuleTrial: Sendable {
        /// One rule the operation needs, and how it decided.
        struct Step: Sendable {
            var rule: AccessRule
            var explanation: ExpressionExplanation
        }

        var operation: RuleOperation
        /// The rules in the order the routes check them (a write checks the read rule first).
        var steps: [Step]
        var allowed: Bool
        /// What a client making the request gets, in words: a status, a code and why.
        var outcome: String

        /// Decides `operation` on `record` (as a rule's `record` reads it) for `caller`; `body` is
        /// the request's JSON on create and update.
        init(
            _ rules: AccessRules, type: String, operation: RuleOperation, caller: RuleCaller, record: ExpressionValue,
            body: ExpressionValue
        ) {
            self.operation = operation
            var steps: [Step] = []
            func check(_ operation: RuleOperation, body: ExpressionValue = .null) -> Bool {
                let rule = rules.rule(for: type, operation)
                let explanation = rule.condition.explain(
                    in: AccessRules.environment(caller: caller, record: record, body: body))
                steps.append(Step(rule: rule, explanation: explanation))
                return explanation.decision
            }
            func refused(_ operation: RuleOperation) -> String {
                let error = RecordRoutes.refusal(rules.rule(for: type, operation), type: type, caller: caller)
                return "\(error.status.code) \(error.code): \(error.message)"
            }
            let hidden = "404 record_not_found: the read rule hides the record, so the request is answered as if it were missing"
            switch operation {
            case .create:
                allowed = check(.create, body: body)
                outcome = allowed ? "201 Created" : refused(.create)
            case .read:
                allowed = check(.read)
                outcome = allowed ? "200 OK" : hidden
            case .update, .delete:
                guard check(.read) else {
                    allowed = false
                    outcome = hidden
                    break
                }
                allowed = check(operation, body: operation == .update ? body : .null)
                outcome = allowed ? (operation == .update ? "200 OK" : "204 No Content") : refused(operation)
            case .list, .subscribe:
                // Both rules decide, as in the list's query and the change stream's filter.
                let first = check(operation)
                allowed = check(.read) && first
                outcome =
                    operation == .list
                    ? (allowed ? "The record is in the caller's lists" : "The record is left out of the caller's lists")
                    : (allowed
                        ? "The record's changes reach the caller's change stream"
                        : "The record's changes are left out of the caller's change stream")
            }
            self.steps = steps
        }
    }

    /// What the trial form holds, checked: each field bounded.
    struct RuleTrialInput: Sendable {
        var operation: RuleOperation
        /// Empty: anonymous.
        var username: String
        var client: String
        var scopes: [String]
        var recordID: String
        var json: String

        static func invalid(_ message: String) -> ServerError { .badRequest("invalid_form", message) }

        static let maxNameLength = 200
        static let maxScopesLength = 1000

        init(_ form: [String: String], maxJSONBytes: Int) throws(ServerError) {
            guard let operation = form["operation"].flatMap(RuleOperation.init(rawValue:)) else {
                throw Self.invalid(
                    "Choose an operation: " + RuleOperation.allCases.map(\.rawValue).joined(separator: ", "))
            }
            self.operation = operation
            username = form["username", default: ""].trimmingCharacters(in: .whitespaces)
            client = form["client", default: ""].trimmingCharacters(in: .whitespaces)
            let scopes = form["scopes", default: ""]
            recordID = form["record_id", default: ""].trimmingCharacters(in: .whitespaces)
            json = form["record_json", default: ""]
            guard username.count <= Self.maxNameLength, client.count <= Self.maxNameLength else {
                throw Self.invalid("A username or client id is at most \(Self.maxNameLength) characters")
            }
            guard scopes.count <= Self.maxScopesLength else {
                throw Self.invalid("The scopes are at most \(Self.maxScopesLength) characters, separated by spaces")
            }
            self.scopes = scopes.split(separator: " ").map(String.init)
            guard json.utf8.count <= maxJSONBytes else {
                throw Self.invalid("The record's JSON is at most \(maxJSONBytes) bytes, as a request body is")
            }
            let hasJSON = !json.allSatisfy(\.isWhitespace)
            guard recordID.isEmpty == hasJSON else {
                throw Self.invalid(
                    "Give either a record id of this type or a record as a JSON object, not both and not neither")
            }
            guard recordID.isEmpty || RecordRoutes.isValidName(recordID) else {
                throw Self.invalid("A record id is 1–64 letters, digits, '_' or '-'")
            }
        }
    }
}
