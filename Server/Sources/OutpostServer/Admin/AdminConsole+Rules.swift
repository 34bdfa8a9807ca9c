import Foundation
import HTTPTypes
import Hummingbird

/// A type's page (`/admin/records/{type}`): its access rules, the form that changes one, and the
/// form that tries one.
extension AdminConsole {
    /// What the type page shows besides the rules: a trial's result, or a form's error with the
    /// values the admin sent.
    struct TypePageState: Sendable {
        var trial: RuleTrial?
        var form: [String: String] = [:]
        var error: String?
        var status: HTTPResponse.Status = .ok
    }

    /// The longest expression the form takes (``ExpressionLimits/maxSourceBytes``'s default).
    static let maxExpressionLength = 4096

    func typePage(_ visit: AdminVisit, type: String, state: TypePageState = TypePageState()) async throws -> Response {
        let rules = try await records.access.current()
        let isRecordType = type != "*" && type != AccessRules.filesType
        let operations = type == AccessRules.filesType ? AccessRules.fileOperations : RuleOperation.allCases
        let rows = operations.map { operation -> [String] in
            let rule = rules.rule(for: type, operation)
            return [
                HTMLPage.escape(operation.rawValue), AdminHTML.code(rule.source),
                HTMLPage.escape(rule.isDefault ? "the default" : rule.name),
            ]
        }
        var body = """
            <h2 id="rules-heading">Access rules</h2>
            <p>The rule in force for each operation: the type's own, else the one of <code>*</code>, else the default.</p>
            """
        body += AdminHTML.table(
            id: "rules", caption: "Rules in force for \(type)", headers: ["Operation", "Rule", "From"], rows: rows, empty: "")
        body += ruleChangeForm(visit, type: type, operations: operations, state: state)
        if isRecordType {
            body += trialForm(visit, type: type, state: state)
            if let trial = state.trial { body += Self.trialHTML(trial) }
            body += "<h2 id=\"records-heading\">Records</h2>\n<p>"
            body += AdminHTML.link(Self.typePath(type) + "/list", "Browse the records of \(type)", id: "browse") + "</p>"
        }
        return page(
            visit, title: "Type \(type)", section: .records, body: body, status: state.status, error: state.error)
    }

    func ruleChangeForm(_ visit: AdminVisit, type: String, operations: [RuleOperation], state: TypePageState) -> String {
        let values = state.form["form"] == Self.ruleChangeForm ? state.form : [:]
        let fields =
            Self.select(id: "rule-operation", name: "operation", label: "Operation", operations, chosen: values["operation"])
            + AdminHTML.textArea(
                id: "rule-expression", label: "Expression", name: "expression", value: values["expression", default: ""],
                maxLength: Self.maxExpressionLength,
                hint: "For example record.owner == caller.user. Leave it empty to remove the type's own rule. "
                    + "This server decides with the change at once, other servers on the database within a second.")
        return "<h2 id=\"change-heading\">Change a rule</h2>\n"
            + form(
                visit, name: Self.ruleChangeForm, action: Self.typePath(type) + "/rules", body: fields, submit: "Save rule",
                id: "save-rule")
    }

    /// A labelled choice of operations.
    static func select(id: String, name: String, label: String, _ operations: [RuleOperation], chosen: String?) -> String {
        let options = operations.map { operation in
            let selected = chosen == operation.rawValue ? " selected" : ""
            return "<option value=\"\(operation.rawValue)\"\(selected)>\(operation.rawValue)</option>"
        }.joined()
        return
            "<label for=\"\(id)\">\(HTMLPage.escape(label))</label>\n<select id=\"\(id)\" name=\"\(name)\">\(options)</select>\n"
    }

    /// `POST /admin/records/{type}/rules`.
    func postRuleChange(_ visit: AdminVisit, _ form: [String: String]) async throws -> Response {
        let type = try Self.ruleType(visit.context)
        let operation = form["operation", default: ""]
        let expression = form["expression", default: ""]
        do {
            guard expression.utf8.count <= Self.maxExpressionLength else {
                throw ServerError.badRequest(
                    "invalid_rule", "An expression is at most \(Self.maxExpressionLength) bytes; shorten it")
            }
            guard let change = try await changeRule(type: type, operation: operation, expression: expression) else {
                throw ServerError.badRequest(
                    "invalid_rule", "\(type) has no rule of its own for \(operation) to remove; write an expression to set one")
            }
            var detail = ["operation": operation, "change": change]
            if change == "set" { detail["expression"] = expression }
            await record(AuditAction.ruleChanged, visit, subject: type, detail: detail)
            let notice = change == "set" ? "Rule \(type).\(operation) is set." : "Rule \(type).\(operation) is removed."
            return seeOther(Self.typePath(type), notice: notice)
        } catch let error as ServerError where error.status == .badRequest {
            return try await typePage(
                visit, type: type, state: TypePageState(form: form, error: error.message, status: .badRequest))
        }
    }
}
