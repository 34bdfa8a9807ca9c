import Foundation
import Hummingbird

/// `/admin/audit`: the audit log, newest first, filtered by action and time, a page of at most
/// ``AdminConsole/pageSize`` events at a time (keyset: `before` is the last id shown).
extension AdminConsole {
    static let auditPath = "\(root)/audit"

    func addAudit(to router: Router<OutpostRequestContext>) {
        get(router, RouterPath(Self.auditPath)) { visit in try await auditPage(visit) }
    }

    func auditPage(_ visit: AdminVisit) async throws -> Response {
        let query = try visit.request.queryFields()
        let action = (query["action"] ?? "").trimmingCharacters(in: .whitespaces)
        let sinceText = (query["since"] ?? "").trimmingCharacters(in: .whitespaces)
        let before = query["before"].flatMap { $0.utf8.count <= 19 ? Int64($0) : nil } ?? 0
        var error: String?
        var since: Int64 = 0
        if action.utf8.count > 64 { error = "Filter by an action of at most 64 characters, e.g. sign_in. or client.added." }
        if !sinceText.isEmpty {
            if let time = AuditQuery.time(sinceText) {
                since = time
            } else {
                error = "Give “since” as a date (2026-11-29, midnight UTC) or a time (2026-11-29T10:00:00Z)."
            }
        }
        let filters = """
            <form method="get" action="\(Self.auditPath)" id="filter-form" class="inline">
            <div>\(AdminHTML.field(id: "action", label: "Action starts with", value: String(action.prefix(64)), type: "search", maxLength: 64, hint: "e.g. sign_in. or client."))</div>
            <div>\(AdminHTML.field(id: "since", label: "Since", value: String(sinceText.prefix(40)), maxLength: 40, hint: "2026-11-29 or 2026-11-29T10:00:00Z (UTC)"))</div>
            <button type="submit" class="secondary" id="filter">Filter</button>
            </form>
            """
        guard error == nil else {
            return page(visit, title: "Audit log", section: .audit, body: filters, status: .badRequest, error: error)
        }
        guard let log = storage as? any AuditStorage else {
            return page(
                visit, title: "Audit log", section: .audit,
                body: "<p>This storage keeps no audit log; use SQLite or PostgreSQL.</p>")
        }
        let events = try await log.auditEvents(
            AuditQuery(since: since, actionPrefix: action, beforeID: max(0, before), limit: Self.pageSize + 1, newestFirst: true))
        let shown = events.prefix(Self.pageSize)
        let names = try await usernames(of: Set(shown.flatMap { [$0.actor, $0.subject].compactMap { $0 } }))
        let rows = shown.map { event in
            [
                AdminHTML.time(event.time), AdminHTML.code(event.action), person(event.actor, names),
                person(event.subject, names), event.clientAddress.map(AdminHTML.code) ?? "",
                event.detail.sorted { $0.key < $1.key }.map { "\(HTMLPage.escape($0.key))=\(HTMLPage.escape($0.value))" }
                    .joined(separator: "<br>"),
            ]
        }
        let next =
            events.count > Self.pageSize
            ? AdminHTML.query(
                Self.auditPath,
                [
                    ("action", action.isEmpty ? nil : action), ("since", sinceText.isEmpty ? nil : sinceText),
                    ("before", shown.last.map { "\($0.id)" }),
                ]) : nil
        let body = """
            \(filters)
            \(AdminHTML.table(
                id: "events", caption: "Events, newest first", headers: ["Time", "Action", "Actor", "Subject", "Address", "Detail"],
                rows: Array(rows), empty: "No event matches."))
            \(AdminHTML.pager(next: next, label: "Older events"))
            """
        return page(visit, title: "Audit log", section: .audit, body: body)
    }

    /// The usernames of those of `ids` that are users' ids (at most two a row of one page).
    func usernames(of ids: Set<String>) async throws -> [String: String] {
        var names: [String: String] = [:]
        for id in ids where id != AuditEvent.operatorActor {
            if let user = try await storage.user(id: id) { names[id] = user.username }
        }
        return names
    }

    /// An actor or subject: a link to the user's page when it is a user, `operator` for the CLI, else its text.
    func person(_ id: String?, _ names: [String: String]) -> String {
        guard let id else { return "" }
        if let name = names[id] { return AdminHTML.link("\(Self.root)/users/\(AdminHTML.pathComponent(id))", name) }
        if id == AuditEvent.operatorActor { return "<em>operator (CLI)</em>" }
        return AdminHTML.code(id)
    }
}
