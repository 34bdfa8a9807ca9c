import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The operators' console at `/admin`: server-rendered pages for users with the ``AdminConsole/role``
/// role, signed in through the server's own browser session (the sign-in pages' `outpost_session`
/// cookie, or `/admin/sign-in`).
///
/// Every page is plain HTML and CSS served by the binary, so there is nothing to build or install.
/// Pages carry the sign-in pages' protections: no framing, no `Referer` to other sites, nothing
/// cached, a content security policy that allows no script unless a page asks for the console's own.
/// Every `POST` must come from the server's own pages (`Sec-Fetch-Site`/`Origin`) and carry a form
/// token bound to the browser's form cookie and to the form's name, and every change it makes is
/// written to the audit log with the admin as actor.
struct AdminConsole: Sendable {
    /// The role that opens the console (`outpost users role add NAME admin`).
    static let role = "admin"
    /// The console's root path.
    static let root = "/admin"

    let auth: AuthService
    /// The browser session, form cookie and same-origin checks of the sign-in pages.
    let pages: OAuthRoutes
    let storage: any Storage
    let maxBodyBytes: Int
    /// The record routes' storage, rules, hooks, cursors and bounds, which the records screens share.
    let records: RecordRoutes
    /// This instance's last failed requests (the recent errors page).
    var recentErrors = RecentErrors()
    /// How long a replaced signing key stays published (``OpenIDConfiguration/signingKeyGracePeriod``).
    var signingKeyGracePeriod = OpenIDConfiguration().signingKeyGracePeriod

    var audit: AuditLog { auth.audit }

    /// The console's parts, in the order the navigation lists them.
    enum Section: String, CaseIterable, Sendable {
        case overview, users, clients, keys, records, changes, errors, audit

        var title: String {
            switch self {
            case .overview: "Overview"
            case .users: "Users"
            case .clients: "Clients"
            case .keys: "Signing keys"
            case .records: "Records and rules"
            case .changes: "Live changes"
            case .errors: "Recent errors"
            case .audit: "Audit log"
            }
        }

        var path: String { self == .overview ? AdminConsole.root : "\(AdminConsole.root)/\(rawValue)" }
    }

    /// The sections the navigation shows: those whose pages this server has.
    static let sections: [Section] = [.overview, .users, .clients, .keys, .records, .changes, .errors, .audit]

    func add(to router: Router<OutpostRequestContext>) {
        addSignIn(to: router)
        addOverview(to: router)
        addUsers(to: router)
        addClients(to: router)
        addKeys(to: router)
        addRecords(to: router)
        addChanges(to: router)
        addErrors(to: router)
        addAudit(to: router)
    }

    // MARK: The gate

    /// Who may use the console, from the request's browser session.
    enum Visitor: Sendable {
        case anonymous
        /// Signed in, without the ``AdminConsole/role`` role.
        case refused(StoredUser)
        case admin(StoredUser)
    }

    func visitor(_ request: Request) async throws -> Visitor {
        guard let user = try await pages.browserUser(request) else { return .anonymous }
        let roles = try await storage.roles(userID: user.id)
        return roles.contains(Self.role) ? .admin(user) : .refused(user)
    }

    /// Registers `GET path` for admins. Anyone else is sent to the console's sign-in (anonymous) or
    /// shown a 403 page (signed in without the role).
    func get(
        _ router: Router<OutpostRequestContext>, _ path: RouterPath,
        _ handler: @escaping @Sendable (AdminVisit) async throws -> Response
    ) {
        router.get(path) { request, context in
            switch try await visitor(request) {
            case .anonymous: return signInRedirect(request)
            case .refused(let user): return notAnOperator(request, user)
            case .admin(let admin): return try await handler(visit(request, context, admin))
            }
        }
    }

    /// Registers `POST path` for admins: the post must come from the server's own pages and carry a
    /// form token of the form named `form`, bound to this browser. `handler` gets the decoded fields.
    func post(
        _ router: Router<OutpostRequestContext>, _ path: RouterPath, form name: String,
        _ handler: @escaping @Sendable (AdminVisit, [String: String]) async throws -> Response
    ) {
        router.post(path) { request, context in
            guard pages.isSameOrigin(request) else { return crossSiteRefusal() }
            let admin: StoredUser
            switch try await visitor(request) {
            case .anonymous: return signInRedirect(request)
            case .refused(let user): return notAnOperator(request, user)
            case .admin(let user): admin = user
            }
            let fields = try await request.formFields(limit: maxBodyBytes)
            let visit = visit(request, context, admin)
            guard auth.checkFormToken(fields["form_token"], fields: ["form": name], binding: visit.formBinding) else {
                return page(
                    visit, title: "Form expired", section: nil,
                    body: "<p><a href=\"\(HTMLPage.escape(Self.root))\">Back to the console</a></p>", status: .badRequest,
                    error: "This form expired or was opened in another browser. Open the page again and repeat the change.")
            }
            return try await handler(visit, fields)
        }
    }

    func visit(_ request: Request, _ context: OutpostRequestContext, _ admin: StoredUser) -> AdminVisit {
        let binding = pages.formBinding(request)
        return AdminVisit(
            request: request, context: context, admin: admin, formBinding: binding.value, setFormCookie: binding.setCookie)
    }

    /// An event of the audit log with the visit's admin as actor.
    func record(_ action: String, _ visit: AdminVisit, subject: String?, detail: [String: String] = [:]) async {
        var detail = detail
        detail["via"] = "console"
        await audit.record(
            AuditEvent(
                actor: visit.admin.id, action: action, subject: subject, clientAddress: visit.context.clientAddress,
                detail: detail))
    }
}

/// One request of a signed-in admin: what a console page needs to answer it.
struct AdminVisit: Sendable {
    let request: Request
    let context: OutpostRequestContext
    let admin: StoredUser
    /// The browser's form cookie, which the page's form tokens are bound to.
    let formBinding: String
    /// The `Set-Cookie` of a new form cookie, when the browser had none.
    let setFormCookie: String?
}
