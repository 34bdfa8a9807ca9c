import Foundation
import HTTPTypes
import Hummingbird

/// `/admin/clients`: the OAuth clients, registering one (the checks of `outpost clients add`),
/// rotating a confidential client's secret, and removing a client with its tokens.
///
/// A new secret (at registration or rotation) is shown once, on the page that answers the `POST`
/// (200, `no-store`), never in a redirect, a cookie or a URL; only its hash is stored.
extension AdminConsole {
    static let clientsPath = "\(root)/clients"
    /// The scopes the registration form offers (`outpost clients add --scope` takes any).
    static let offeredScopes = ["records:read", "records:write", "profile", OpenIDProvider.scope]
    /// The grants and scopes ticked on an empty form: those of `outpost clients add`.
    static let defaultGrants: Set<String> = ["authorization_code", "refresh_token"]
    static let maxClientNameLength = 200
    static let maxRedirectURIs = 20
    static let maxRedirectURILength = 2000

    func addClients(to router: Router<OutpostRequestContext>) {
        get(router, RouterPath(Self.clientsPath)) { visit in try await clientsPage(visit) }
        post(router, RouterPath(Self.clientsPath), form: "client.add") { visit, fields in
            try await registerClient(visit, fields)
        }
        get(router, RouterPath("\(Self.clientsPath)/{id}")) { visit in
            try await clientPage(visit, id: try visit.context.pathParameter("id") ?? "")
        }
        post(router, RouterPath("\(Self.clientsPath)/{id}/secret"), form: "client.rotate_secret") { visit, fields in
            try await rotateSecret(visit, id: try visit.context.pathParameter("id") ?? "", fields)
        }
        post(router, RouterPath("\(Self.clientsPath)/{id}/remove"), form: "client.remove") { visit, fields in
            try await removeClient(visit, id: try visit.context.pathParameter("id") ?? "", fields)
        }
    }

    /// What the registration form holds: as sent back after a refusal, or the defaults.
    struct ClientDraft: Sendable {
        var name = ""
        var redirectURIs = ""
        var grants = AdminConsole.defaultGrants
        var scopes = Set(AdminConsole.offeredScopes)
        var confidential = false

        init() {}

        init(_ fields: [String: String]) {
            name = String((fields["name"] ?? "").prefix(AdminConsole.maxClientNameLength))
            redirectURIs = String((fields["redirect_uris"] ?? "").prefix(AdminConsole.maxRedirectURIs * 200))
            grants = Set(OAuthClient.allGrants.filter { fields["grant.\($0)"] != nil })
            scopes = Set(AdminConsole.offeredScopes.filter { fields["scope.\($0)"] != nil })
            confidential = fields["confidential"] != nil
        }
    }

    func clientsPage(
        _ visit: AdminVisit, draft: ClientDraft = ClientDraft(), status: HTTPResponse.Status = .ok, error: String? = nil
    ) async throws -> Response {
        let clients = try await storage.clients()
        let offset = Self.offset(visit.request, count: clients.count)
        let rows = clients.dropFirst(offset).prefix(Self.pageSize).map { client in
            [
                AdminHTML.link("\(Self.clientsPath)/\(AdminHTML.pathComponent(client.id))", client.id),
                HTMLPage.escape(client.name),
                client.isConfidential ? "confidential" : "public",
                HTMLPage.escape(client.grants.joined(separator: " ")),
                HTMLPage.escape(client.scopes.joined(separator: " ")),
                client.redirectURIs.map(AdminHTML.code).joined(separator: "<br>"),
            ]
        }
        let next = offset + Self.pageSize < clients.count ? "\(Self.clientsPath)?offset=\(offset + Self.pageSize)" : nil
        let body = """
            \(AdminHTML.table(
                id: "clients", caption: "Registered clients (\(clients.count))",
                headers: ["Client id", "Name", "Type", "Grants", "Scopes", "Redirect URIs"], rows: Array(rows),
                empty: "No client is registered."))
            \(AdminHTML.pager(next: next))
            <h2 id="register-heading">Register a client</h2>
            \(form(visit, name: "client.add", action: Self.clientsPath, body: registrationFields(draft), submit: "Register client", id: "register"))
            """
        return page(visit, title: "Clients", section: .clients, body: body, status: status, error: error)
    }

    func registrationFields(_ draft: ClientDraft) -> String {
        let grants = OAuthClient.allGrants.map { grant in
            Self.checkbox(id: "grant-\(grant)", name: "grant.\(grant)", label: grant, checked: draft.grants.contains(grant))
        }.joined()
        let scopes = Self.offeredScopes.map { scope in
            Self.checkbox(
                id: "scope-\(scope.replacingOccurrences(of: ":", with: "-"))", name: "scope.\(scope)", label: scope,
                checked: draft.scopes.contains(scope))
        }.joined()
        return """
            \(AdminHTML.field(id: "name", label: "Name", value: draft.name, maxLength: Self.maxClientNameLength, required: true, hint: "People see it on the consent page."))
            \(AdminHTML.textArea(id: "redirect_uris", label: "Redirect URIs", value: draft.redirectURIs, maxLength: Self.maxRedirectURIs * (Self.maxRedirectURILength + 1), hint: "One a line, matched exactly: https, http on a loopback address, or an app's own scheme (com.example.app:/cb)."))
            <fieldset id="grants"><legend>Grants</legend>\(grants)</fieldset>
            <fieldset id="scopes"><legend>Scopes</legend>\(scopes)</fieldset>
            <fieldset id="kind"><legend>Secret</legend>\(Self.checkbox(id: "confidential", name: "confidential", label: "Confidential: a server that can keep a secret", checked: draft.confidential))</fieldset>
            """
    }

    static func checkbox(id: String, name: String, label: String, checked: Bool, required: Bool = false) -> String {
        """
        <label for="\(HTMLPage.escape(id))"><input type="checkbox" id="\(HTMLPage.escape(id))" name="\(HTMLPage.escape(name))" value="on"\(checked ? " checked" : "")\(required ? " required" : "")> \(HTMLPage.escape(label))</label>
        """
    }

    func registerClient(_ visit: AdminVisit, _ fields: [String: String]) async throws -> Response {
        let draft = ClientDraft(fields)
        let refuse: (String) async throws -> Response = { message in
            try await clientsPage(visit, draft: draft, status: .badRequest, error: message)
        }
        let name = (fields["name"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty, name.count <= Self.maxClientNameLength,
            !name.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) })
        else {
            return try await refuse("Give the client a name of 1 to \(Self.maxClientNameLength) characters, on one line.")
        }
        let uris = (fields["redirect_uris"] ?? "").split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard uris.count <= Self.maxRedirectURIs, uris.allSatisfy({ $0.utf8.count <= Self.maxRedirectURILength }) else {
            return try await refuse(
                "Give at most \(Self.maxRedirectURIs) redirect URIs of at most \(Self.maxRedirectURILength) bytes each.")
        }
        let grants = OAuthClient.allGrants.filter { draft.grants.contains($0) }
        guard !grants.isEmpty else { return try await refuse("Tick at least one grant the client may use.") }
        let scopes = Self.offeredScopes.filter { draft.scopes.contains($0) }
        let registered: (client: OAuthClient, secret: String?)
        do {
            registered = try await storage.registerClient(
                name: name, redirectURIs: uris, grants: grants, scopes: scopes, confidential: draft.confidential)
        } catch let error as ServerError where error.status == .badRequest {
            return try await refuse(Self.registrationMessage(error))
        }
        let client = registered.client
        var event = AuditEvent.clientAdded(client, actor: visit.admin.id, clientAddress: visit.context.clientAddress)
        event.detail["via"] = "console"
        await audit.record(event)
        var facts: [(term: String, html: String)] = [
            ("Client id", "<code id=\"client-id\">\(HTMLPage.escape(client.id))</code>"),
            ("Name", HTMLPage.escape(client.name)),
        ]
        if let secret = registered.secret {
            facts.append(("Client secret", "<code id=\"client-secret\">\(HTMLPage.escape(secret))</code>"))
        }
        let warning =
            registered.secret == nil
            ? ""
            : "<p class=\"error\" id=\"secret-warning\">The secret is shown this once: copy it into the client's configuration now. The server keeps only its hash.</p>"
        let body = """
            \(warning)
            \(AdminHTML.definitions(id: "registered", facts))
            \(grants.contains("password") ? "<p id=\"password-note\">The password grant is legacy (RFC 9700 §2.4): prefer authorization_code or device_code.</p>" : "")
            <p>\(AdminHTML.link("\(Self.clientsPath)/\(AdminHTML.pathComponent(client.id))", "Open the client", id: "open-client")) · \(AdminHTML.link(Self.clientsPath, "Back to the clients"))</p>
            """
        return Self.noStore(page(visit, title: "Client registered", section: .clients, body: body))
    }

    /// The console's wording of a refusal of ``AuthStorage/registerClient(name:redirectURIs:grants:scopes:confidential:id:)``,
    /// whose messages name the CLI's options.
    static func registrationMessage(_ error: ServerError) -> String {
        switch error.code {
        case "missing_redirect_uri": "The browser grants (authorization_code, implicit) need at least one redirect URI."
        case "needs_secret": "The client_credentials grant needs a confidential client: tick Confidential."
        default: error.message
        }
    }

    func clientPage(
        _ visit: AdminVisit, id: String, status: HTTPResponse.Status = .ok, error: String? = nil
    ) async throws -> Response {
        guard let client = try await storage.client(id: id) else { return noClient(visit, id) }
        let path = "\(Self.clientsPath)/\(AdminHTML.pathComponent(client.id))"
        let facts = AdminHTML.definitions(
            id: "client",
            [
                ("Client id", AdminHTML.code(client.id)),
                ("Name", HTMLPage.escape(client.name)),
                ("Type", client.isConfidential ? "confidential" : "public"),
                ("Grants", HTMLPage.escape(client.grants.joined(separator: " "))),
                ("Scopes", HTMLPage.escape(client.scopes.joined(separator: " "))),
                (
                    "Redirect URIs",
                    client.redirectURIs.isEmpty ? "none" : client.redirectURIs.map(AdminHTML.code).joined(separator: "<br>")
                ),
                ("Registered", AdminHTML.time(client.createdAt)),
            ])
        let rotation =
            client.isConfidential
            ? """
            <h2 id="rotate-heading">Rotate the secret</h2>
            <p>The new secret is shown once, on the next page; the old one is refused from then on. The client's tokens stay valid unless you revoke them too, as you should after a leak.</p>
            \(form(visit, name: "client.rotate_secret", action: path + "/secret", body: Self.checkbox(id: "revoke_tokens", name: "revoke_tokens", label: "Also revoke every token issued to this client", checked: false), submit: "Rotate secret", id: "rotate"))
            """ : ""
        let removal = """
            <h2 id="remove-heading">Remove the client</h2>
            <p>Its tokens are revoked and it can no longer sign anyone in. This cannot be undone.</p>
            \(form(visit, name: "client.remove", action: path + "/remove", body: Self.checkbox(id: "confirm", name: "confirm", label: "Yes, remove \(client.name) and revoke its tokens", checked: false, required: true), submit: "Remove client", id: "remove", danger: true))
            """
        let body = facts + rotation + removal + "<p>\(AdminHTML.link(Self.clientsPath, "Back to the clients"))</p>"
        return page(visit, title: "Client \(client.name)", section: .clients, body: body, status: status, error: error)
    }

    func noClient(_ visit: AdminVisit, _ id: String) -> Response {
        page(
            visit, title: "No such client", section: .clients,
            body: "<p>\(AdminHTML.link(Self.clientsPath, "Back to the clients"))</p>", status: .notFound,
            error: "No client has the id \(id.prefix(200)); it may have been removed.")
    }

    func rotateSecret(_ visit: AdminVisit, id: String, _ fields: [String: String]) async throws -> Response {
        guard let client = try await storage.client(id: id) else { return noClient(visit, id) }
        guard client.isConfidential else {
            return try await clientPage(
                visit, id: id, status: .badRequest, error: "\(client.name) is a public client: it has no secret to rotate.")
        }
        let revoke = fields["revoke_tokens"] != nil
        guard let secret = try await storage.rotateClientSecret(id: id, revokeTokens: revoke) else {
            return noClient(visit, id)
        }
        await record(
            AuditAction.clientSecretRotated, visit, subject: id, detail: ["tokens_revoked": revoke ? "true" : "false"])
        let body = """
            <p class="error" id="secret-warning">The secret is shown this once: copy it into the client's configuration now. The old secret is refused from now on\(revoke ? ", and every token issued to the client is revoked" : "; the client's tokens stay valid").</p>
            \(AdminHTML.definitions(id: "rotated", [("Client id", AdminHTML.code(id)), ("New client secret", "<code id=\"client-secret\">\(HTMLPage.escape(secret))</code>")]))
            <p>\(AdminHTML.link("\(Self.clientsPath)/\(AdminHTML.pathComponent(id))", "Back to \(client.name)", id: "open-client"))</p>
            """
        return Self.noStore(page(visit, title: "New secret for \(client.name)", section: .clients, body: body))
    }

    func removeClient(_ visit: AdminVisit, id: String, _ fields: [String: String]) async throws -> Response {
        guard fields["confirm"] != nil else {
            return try await clientPage(
                visit, id: id, status: .badRequest, error: "Tick the confirmation to remove the client, then press Remove client."
            )
        }
        guard let client = try await storage.client(id: id), try await storage.removeClient(id: id) else {
            return noClient(visit, id)
        }
        await record(AuditAction.clientRemoved, visit, subject: id, detail: ["name": client.name])
        return seeOther(Self.clientsPath, notice: "Removed the client \(client.name); its tokens are revoked.")
    }

    /// `response` with `Cache-Control: no-store` (a page that shows a secret).
    static func noStore(_ response: Response) -> Response {
        var response = response
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// The most rows a console list shows on one page.
    static let pageSize = 50

    /// The `offset` query value of a list of `count` rows: `0` unless a number within the list.
    static func offset(_ request: Request, count: Int) -> Int {
        guard let text = (try? request.queryFields())?["offset"], text.utf8.count <= 9, let value = Int(text),
            value >= 0, value < max(1, count)
        else { return 0 }
        return value
    }
}
