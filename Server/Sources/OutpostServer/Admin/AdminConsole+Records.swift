import Foundation
import Hummingbird

/// The records section (`/admin/records`): record types, their access rules, and their records.
extension AdminConsole {
    func addRecords(to router: Router<OutpostRequestContext>) {
        get(router, "/admin/records") { visit in try await typesPage(visit) }
        get(router, "/admin/records/{type}") { visit in
            try await typePage(visit, type: try Self.ruleType(visit.context))
        }
        post(router, "/admin/records/{type}/rules", form: Self.ruleChangeForm) { visit, form in
            try await postRuleChange(visit, form)
        }
        post(router, "/admin/records/{type}/trial", form: Self.ruleTrialForm) { visit, form in
            try await postRuleTrial(visit, form)
        }
        get(router, "/admin/records/{type}/list") { visit in try await recordsListPage(visit) }
        get(router, "/admin/records/{type}/{id}") { visit in
            let (type, id) = try RecordRoutes.typeAndID(visit.context)
            return try await recordPage(visit, type: type, id: id)
        }
        post(router, "/admin/records/{type}/{id}/edit", form: Self.recordUpdateForm) { visit, form in
            try await postRecordEdit(visit, form)
        }
        post(router, "/admin/records/{type}/{id}/delete", form: Self.recordDeleteForm) { visit, form in
            try await postRecordDelete(visit, form)
        }
    }

    static let ruleChangeForm = "rule.change"
    static let ruleTrialForm = "rule.trial"
    static let recordUpdateForm = "record.update"
    static let recordDeleteForm = "record.delete"

    /// The type of a rules page: a record type, `*` or `@files`.
    static func ruleType(_ context: OutpostRequestContext) throws -> String {
        guard let type = try context.pathParameter("type"),
            type == "*" || type == AccessRules.filesType || RecordRoutes.isValidName(type)
        else {
            throw ServerError.badRequest(
                "invalid_type", "A record type is 1–64 letters, digits, '_' or '-', or * or @files for their rules")
        }
        return type
    }

    /// The path of a type's page.
    static func typePath(_ type: String) -> String { Section.records.path + "/" + AdminHTML.pathComponent(type) }

    /// The path of a record's page.
    static func recordPath(_ type: String, _ id: String) -> String {
        typePath(type) + "/" + AdminHTML.pathComponent(id)
    }

    /// `GET /admin/records?after=TYPE`: the types, each linking to its page.
    func typesPage(_ visit: AdminVisit) async throws -> Response {
        let after = try visit.request.queryFields()["after"].flatMap { $0.isEmpty ? nil : $0 }
        if let after, !RecordRoutes.isValidName(after) && after != "*" && after != AccessRules.filesType {
            throw ServerError.badRequest("invalid_after", "after is a record type: 1–64 letters, digits, '_' or '-'")
        }
        let (types, next) = try await recordTypes(after: after)
        let items = types.enumerated().map { index, type in
            "<li>\(AdminHTML.link(Self.typePath(type), type, id: "type-\(index + 1)"))\(Self.typeNote(type))</li>"
        }.joined(separator: "\n")
        var body = """
            <p>Record types that hold records, and those with access rules of their own: <code>*</code> holds the rules \
            of every type without its own, <code>@files</code> the rules of files.</p>
            """
        body +=
            types.isEmpty
            ? "<p id=\"types-empty\" class=\"muted\">No record type holds records and no rule is set: the defaults apply to every type.</p>"
            : "<ul id=\"types\">\n\(items)\n</ul>"
        body += AdminHTML.pager(next: next.map { AdminHTML.query(Section.records.path, [("after", $0)]) }, label: "More types")
        return page(visit, title: "Record types", section: .records, body: body)
    }

    static func typeNote(_ type: String) -> String {
        switch type {
        case "*": " <span class=\"muted\">(every type without its own rules)</span>"
        case AccessRules.filesType: " <span class=\"muted\">(files)</span>"
        default: ""
        }
    }
}
