import Foundation
import Hummingbird

/// The "test a rule" form of a type's page and its answer.
extension AdminConsole {
    func trialForm(_ visit: AdminVisit, type: String, state: TypePageState) -> String {
        let values = state.form["form"] == Self.ruleTrialForm ? state.form : [:]
        func text(_ name: String, _ label: String, hint: String, maxLength: Int = RuleTrialInput.maxNameLength) -> String {
            AdminHTML.field(
                id: "trial-" + name.replacingOccurrences(of: "_", with: "-"), label: label, name: name,
                value: values[name, default: ""], maxLength: maxLength, hint: hint)
        }
        var fields = Self.select(
            id: "trial-operation", name: "operation", label: "Operation", RuleOperation.allCases, chosen: values["operation"])
        fields += text("username", "Caller's username", hint: "Empty: a caller without a token (or a client alone, below).")
        fields += text("client", "Caller's client id (optional)", hint: "The OAuth client the caller's token was issued to.")
        fields += text(
            "scopes", "Caller's scopes (optional)", hint: "Separated by spaces, e.g. records:read records:write.",
            maxLength: RuleTrialInput.maxScopesLength)
        fields += text("record_id", "Record id", hint: "A record of this type; or leave it empty and write a record below.")
        fields += AdminHTML.textArea(
            id: "trial-record-json", label: "Record as JSON", name: "record_json", value: values["record_json", default: ""],
            maxLength: records.maxBodyBytes,
            hint: "A JSON object: the record's fields, with owner, id and private as the server keeps them. "
                + "On create and update the fields are also the request's body.")
        return """
            <h2 id="trial-heading">Test a rule</h2>
            <p>Decides an operation for a caller and a record as a request meets the rules in force.</p>
            """
                + form(
                    visit, name: Self.ruleTrialForm, action: Self.typePath(type) + "/trial", body: fields, submit: "Test",
                    id: "test-rule")
    }

    /// A trial's answer: allowed or denied, what a client gets, and each rule's explanation.
    static func trialHTML(_ trial: RuleTrial) -> String {
        var html = """
            <section aria-labelledby="trial-result">
            <h2 id="trial-result">Result: \(trial.allowed ? "allowed" : "denied")</h2>
            <p id="trial-outcome">\(HTMLPage.escape(trial.outcome))</p>
            """
        for step in trial.steps {
            let origin = step.rule.isDefault ? "The default \(step.rule.operation.rawValue) rule" : "Rule \(step.rule.name)"
            html += "<h3>\(HTMLPage.escape(origin)) \(step.explanation.decision ? "allows" : "denies")</h3>\n"
            html += "<p>\(AdminHTML.code(step.rule.source))</p>\n"
            html += "<pre>\(HTMLPage.escape(step.explanation.description))</pre>\n"
        }
        return html + "</section>\n"
    }

    /// `POST /admin/records/{type}/trial`: the type's page with the trial's answer.
    func postRuleTrial(_ visit: AdminVisit, _ form: [String: String]) async throws -> Response {
        let type = try RecordRoutes.type(visit.context)
        do {
            let input = try RuleTrialInput(form, maxJSONBytes: records.maxBodyBytes)
            let trial = try await ruleTrial(type: type, input)
            return try await typePage(visit, type: type, state: TypePageState(trial: trial, form: form))
        } catch let error as ServerError where error.status == .badRequest {
            return try await typePage(
                visit, type: type, state: TypePageState(form: form, error: error.message, status: .badRequest))
        }
    }
}
