import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `/admin/users/{id}`: one user's details, roles, quotas with what they use, and the buttons that
/// disable, enable or sign them out everywhere.
extension AdminConsole {
    /// The user named by the path's `{id}`; `nil` when there is none (or the id is too long to be one).
    func pathUser(_ visit: AdminVisit) async throws -> StoredUser? {
        guard let id = try visit.context.pathParameter("id"), !id.isEmpty, id.utf8.count <= Self.maxUserIDLength else {
            return nil
        }
        return try await storage.user(id: id)
    }

    func userPage(_ visit: AdminVisit) async throws -> Response {
        guard let user = try await pathUser(visit) else { return noSuchUser(visit) }
        return try await userPage(visit, user)
    }

    func noSuchUser(_ visit: AdminVisit) -> Response {
        page(
            visit, title: "No such user", section: .users,
            body: "<p>\(AdminHTML.link(Self.usersPath, "Back to the users", id: "back"))</p>", status: .notFound,
            error: "There is no user with this id; they may have been deleted.")
    }

    /// The user's page; with `error`, after a refused change (`status` 4xx).
    func userPage(_ visit: AdminVisit, _ user: StoredUser, status: HTTPResponse.Status = .ok, error: String? = nil)
        async throws -> Response
    {
        let path = Self.userPath(user.id)
        let email = try await (storage as? any MailStorage)?.email(userID: user.id)
        let identities = try await (storage as? any UpstreamProviderStorage)?.linkedIdentities(userID: user.id).count ?? 0
        let details = AdminHTML.definitions(
            id: "user-details",
            [
                ("Username", HTMLPage.escape(user.username)),
                ("Id", AdminHTML.code(user.id)),
                ("E-mail", Self.emailHTML(email?.address, verified: email?.verified ?? false)),
                ("Status", user.disabledAt.map { "Disabled since " + AdminHTML.time($0) } ?? "Active: may sign in"),
                ("Created", AdminHTML.time(user.createdAt)),
                ("Password", user.passwordHash == nil ? "none (signs in through providers)" : "set"),
                ("Linked identities", "\(identities)"),
                (
                    "Entitlements",
                    user.entitlements.isEmpty
                        ? "<span class=\"muted\">none</span>" : HTMLPage.escape(user.entitlements.joined(separator: ", "))
                ),
            ])
        let body = """
            <p>\(AdminHTML.link(Self.usersPath, "All users", id: "back"))</p>
            \(details)
            <h2 id="access-heading">Access</h2>
            \(accessForms(visit, user, path: path))
            <h2 id="roles-heading">Roles</h2>
            \(try await rolesSection(visit, user, path: path))
            <h2 id="quotas-heading">Quotas</h2>
            \(try await quotasSection(visit, user, path: path))
            """
        return page(visit, title: "User \(user.username)", section: .users, body: body, status: status, error: error)
    }

    /// Disable or enable, and sign out everywhere. An admin's own page offers no Disable.
    func accessForms(_ visit: AdminVisit, _ user: StoredUser, path: String) -> String {
        var forms: [String] = []
        if user.isDisabled {
            forms.append(form(visit, name: Self.enableForm, action: path + "/enable", submit: "Enable", id: "enable"))
        } else if user.id != visit.admin.id {
            forms.append(
                form(visit, name: Self.disableForm, action: path + "/disable", submit: "Disable", id: "disable", danger: true))
        }
        forms.append(
            form(
                visit, name: Self.signOutEverywhereForm, action: path + "/sign-out", submit: "Sign out everywhere",
                id: "sign-out-everywhere", secondary: true))
        let explain =
            user.id == visit.admin.id
            ? "This is your own account: you cannot disable it from here (another admin can)."
            : "Disabling stops every sign-in and ends every token and browser session at once; enabling lets them sign in again."
        return
            "<p class=\"muted\" id=\"access-explain\">\(HTMLPage.escape(explain))</p><div class=\"actions\">\(forms.joined())</div>"
    }

    func rolesSection(_ visit: AdminVisit, _ user: StoredUser, path: String) async throws -> String {
        let roles = try await storage.roles(userID: user.id)
        let rows = roles.map { role in
            [
                AdminHTML.code(role),
                form(
                    visit, name: Self.removeRoleForm, action: path + "/roles/remove",
                    body: "<input type=\"hidden\" name=\"role\" value=\"\(HTMLPage.escape(role))\">",
                    submit: "Remove \(role)", id: "remove-role-\(role)", secondary: true),
            ]
        }
        let table = AdminHTML.table(
            id: "roles", caption: "Roles of \(user.username)", headers: ["Role", "Change"], rows: rows, empty: "No roles.")
        let add = form(
            visit, name: Self.addRoleForm, action: path + "/roles/add",
            body: AdminHTML.field(id: "role", label: "Role to give", maxLength: 64, required: true, hint: RoleName.help),
            submit: "Give role", id: "add-role")
        return table + add
    }

    func quotasSection(_ visit: AdminVisit, _ user: StoredUser, path: String) async throws -> String {
        guard let quotas = storage as? any QuotaStorage else {
            return "<p class=\"muted\">This server's storage keeps no quotas.</p>"
        }
        let overrides = try await quotas.quotaOverrides(user: user.id)
        let defaults = try await quotas.defaultQuotas()
        let usage = try await quotas.recordUsage(owner: user.id)
        let bounds = Self.quotaBounds(overrides, defaults)
        let used: [Int64?] = [usage.records, usage.recordBytes, nil, nil]
        let rows = zip(bounds, used).map { bound, used in
            [
                HTMLPage.escape(bound.label),
                used.map { "\($0)" } ?? "<span class=\"muted\">not counted here</span>",
                bound.inForce.map { "\($0)" } ?? "no bound",
                bound.own == .standard ? "default" : HTMLPage.escape(bound.own.text),
            ]
        }
        let table = AdminHTML.table(
            id: "quotas", caption: "Quotas of \(user.username)", headers: ["Quota", "Used", "In force", "Setting"], rows: rows,
            empty: "")
        let fields = bounds.map { bound in
            AdminHTML.field(
                id: bound.field, label: bound.label, value: bound.own.text, maxLength: Self.maxQuotaFieldLength,
                required: true, hint: "Take \(QuotaBound.parsingHelp).")
        }.joined(separator: "\n")
        return table
            + form(visit, name: Self.quotasForm, action: path + "/quotas", body: fields, submit: "Set quotas", id: "set-quotas")
    }

    /// One quota: its form field, label, the user's own setting and the bound in force.
    struct QuotaRow {
        var field: String
        var label: String
        var own: QuotaBound
        var inForce: Int64?
    }

    static func quotaBounds(_ overrides: QuotaOverrides, _ defaults: Quotas) -> [QuotaRow] {
        let applied = defaults.applying(overrides)
        return [
            QuotaRow(field: "records", label: "Records", own: overrides.records, inForce: applied.records),
            QuotaRow(field: "record_bytes", label: "Record bytes", own: overrides.recordBytes, inForce: applied.recordBytes),
            QuotaRow(field: "file_bytes", label: "File bytes", own: overrides.fileBytes, inForce: applied.fileBytes),
            QuotaRow(
                field: "pending_uploads", label: "Pending uploads", own: overrides.pendingUploads,
                inForce: applied.pendingUploads),
        ]
    }
}
