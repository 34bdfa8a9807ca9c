import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// `/admin/users`: users found by a part of their username or e-mail address, a page at a time.
extension AdminConsole {
    static let usersPath = "\(root)/users"
    /// The longest `after` cursor taken (a username).
    static let maxUserCursorLength = 512
    /// The longest user id taken from a path.
    static let maxUserIDLength = 128

    func addUsers(to router: Router<OutpostRequestContext>) {
        get(router, RouterPath(Self.usersPath)) { visit in try await usersPage(visit) }
        get(router, RouterPath(Self.usersPath + "/{id}")) { visit in try await userPage(visit) }
        addUserActions(to: router)
    }

    /// The storage's user administration; `nil` for a storage without one.
    var userAdministration: (any UserAdminStorage)? { storage as? any UserAdminStorage }

    /// The path of a user's page.
    static func userPath(_ id: String) -> String { "\(usersPath)/\(AdminHTML.pathComponent(id))" }

    func usersPage(_ visit: AdminVisit) async throws -> Response {
        let query = try visit.request.queryFields()
        let text = query["q"] ?? ""
        let form = Self.userSearchForm(text)
        guard let search = UserSearch(text) else {
            return page(
                visit, title: "Users", section: .users, body: form, status: .badRequest,
                error: "Search for at most \(UserSearch.maxQueryLength) characters of a username or e-mail address.")
        }
        let after = query["after"].flatMap { $0.isEmpty ? nil : $0 }
        if let after, after.utf8.count > Self.maxUserCursorLength {
            return page(
                visit, title: "Users", section: .users, body: form, status: .badRequest,
                error: "This page link is not valid; start again from the first page.")
        }
        guard let administration = userAdministration else { return unsupportedUsers(visit) }
        let found = try await administration.users(search, after: after, limit: UserSearch.maxPageSize)
        let rows = found.users.map { user in
            [
                AdminHTML.link(Self.userPath(user.id), user.username),
                Self.emailHTML(user.email, verified: user.emailVerified),
                user.roles.isEmpty ? "<span class=\"muted\">none</span>" : HTMLPage.escape(user.roles.joined(separator: ", ")),
                user.disabledAt.map { "Disabled " + AdminHTML.time($0) } ?? "Active",
                AdminHTML.time(user.createdAt),
            ]
        }
        let searched = search.text.isEmpty ? nil : search.text
        let caption =
            searched.map { "Users whose username or e-mail address contains “\($0)”" } ?? "Users, by username"
        let first =
            after == nil
            ? "" : "<p>\(AdminHTML.link(AdminHTML.query(Self.usersPath, [("q", searched)]), "First page", id: "first-page"))</p>"
        let body = """
            \(form)
            \(AdminHTML.table(
                id: "users", caption: caption, headers: ["Username", "E-mail", "Roles", "Status", "Created"], rows: rows,
                empty: searched == nil ? "No users." : "No user matches this search."))
            \(AdminHTML.pager(next: found.next.map { AdminHTML.query(Self.usersPath, [("q", searched), ("after", $0)]) }))
            \(first)
            """
        return page(visit, title: "Users", section: .users, body: body)
    }

    /// The search form (a `GET`: it changes nothing).
    static func userSearchForm(_ text: String) -> String {
        """
        <form method="get" action="\(usersPath)" id="user-search-form" role="search">
        \(AdminHTML.field(
            id: "q", label: "Search users", value: text, type: "search", maxLength: UserSearch.maxQueryLength,
            hint: "A part of a username or e-mail address; leave empty to list everyone."))
        <button type="submit" class="primary" id="search">Search</button>
        </form>
        """
    }

    /// An address and whether it is verified.
    static func emailHTML(_ email: String?, verified: Bool) -> String {
        guard let email else { return "<span class=\"muted\">none</span>" }
        return HTMLPage.escape(email) + (verified ? " (verified)" : " <span class=\"muted\">(not verified)</span>")
    }

    func unsupportedUsers(_ visit: AdminVisit) -> Response {
        page(
            visit, title: "Users", section: .users, body: "", status: .notImplemented,
            error: "This server's storage cannot list or disable users; use SQLite or PostgreSQL.")
    }
}
