import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// The authorization endpoint: the browser sign-in and consent pages, their CSRF protection,
/// the browser session cookie and sign-out.
extension OAuthRoutes {
    /// The validated authorization request, or a page explaining what is wrong (never a redirect to
    /// an unverified redirect URI).
    struct AuthorizationRequest {
        var client: OAuthClient
        var responseType: String
        var redirectURI: String
        var scope: String
        var state: String?
        var codeChallenge: String?
        /// OpenID Connect's `nonce`, carried on the code to the ID token.
        var nonce: String?

        var fields: [String: String] {
            var fields = ["client_id": client.id, "response_type": responseType, "redirect_uri": redirectURI, "scope": scope]
            if let state { fields["state"] = state }
            if let nonce { fields["nonce"] = nonce }
            if let codeChallenge {
                fields["code_challenge"] = codeChallenge
                fields["code_challenge_method"] = "S256"
            }
            return fields
        }
    }

    enum AuthorizationProblem: Error {
        /// Shown to the user: the client or redirect URI cannot be trusted.
        case page(String)
        /// Sent back to the client through its redirect URI.
        case redirect(code: String, description: String, request: AuthorizationRequest)
    }

    func validate(_ parameters: [String: String]) async throws -> AuthorizationRequest {
        guard let clientID = parameters["client_id"], let client = try await auth.storage.client(id: clientID) else {
            throw AuthorizationProblem.page("The application that sent you here is not registered with this server.")
        }
        guard let redirectURI = parameters["redirect_uri"],
            AuthService.redirectMatches(redirectURI, registered: client.redirectURIs)
        else {
            throw AuthorizationProblem.page(
                "The application asked to return to an address it has not registered, so this sign-in was stopped.")
        }
        let responseType = parameters["response_type"] ?? ""
        var request = AuthorizationRequest(
            client: client, responseType: responseType, redirectURI: redirectURI, scope: "", state: parameters["state"],
            codeChallenge: nil)
        do {
            request.scope = try AuthService.grantedScope(requested: parameters["scope"], client: client)
            request.nonce = try OpenIDProvider.nonce(parameters)
        } catch let error as OAuthError {
            throw AuthorizationProblem.redirect(code: error.code, description: error.description, request: request)
        }
        switch responseType {
        case "code":
            guard client.grants.contains("authorization_code") else {
                throw AuthorizationProblem.redirect(
                    code: "unauthorized_client", description: "This client may not use the code flow", request: request)
            }
            if let challenge = parameters["code_challenge"] {
                guard parameters["code_challenge_method"] == "S256", challenge.utf8.count == 43,
                    Self.isValidVerifier(challenge + "xxxxx")  // base64url: the same unreserved characters
                else {
                    throw AuthorizationProblem.redirect(
                        code: "invalid_request", description: "Only PKCE S256 is supported", request: request)
                }
                request.codeChallenge = challenge
            } else if !client.isConfidential {
                throw AuthorizationProblem.redirect(
                    code: "invalid_request", description: "Public clients must send a PKCE code_challenge (S256)",
                    request: request)
            }
        case "token":
            guard client.grants.contains("implicit") else {
                throw AuthorizationProblem.redirect(
                    code: "unauthorized_client", description: "This client may not use the implicit flow", request: request)
            }
        default:
            throw AuthorizationProblem.redirect(
                code: "unsupported_response_type", description: "response_type must be code or token", request: request)
        }
        return request
    }

    func authorizePage(_ request: Request) async throws -> Response {
        do {
            let authorization = try await validate(try request.queryFields())
            if let error = try OpenIDProvider.promptNone(request, signedIn: try await browserUser(request) != nil) {
                return redirect(authorization, error)
            }
            return try await consentPage(request, authorization, message: nil)
        } catch let problem as AuthorizationProblem {
            return problemResponse(problem)
        }
    }

    func consentPage(
        _ request: Request, _ authorization: AuthorizationRequest, message: String?, status: HTTPResponse.Status = .ok,
        retryAfter: Int? = nil
    ) async throws -> Response {
        let user = try await browserUser(request)
        let binding = formBinding(request)
        let fields = authorization.fields
        let returnTo = "/oauth/authorize?" + URLEncodedForm.encode(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        var upstream: [UpstreamProvider] = []
        if user == nil { upstream = try await webSignIn.providers() }
        let name = HTMLPage.escape(authorization.client.name)
        let body = """
            <p id="client"><strong>\(name)</strong> wants to use your Outpost account\(authorization.scope.isEmpty ? "." : " to:")</p>
            \(HTMLPage.scopeList(authorization.scope))
            <p id="redirect">Whatever you choose, your browser then returns to <strong id="redirect-host">\(HTMLPage.escape(Self.destination(authorization.redirectURI)))</strong>.</p>
            \(HTMLPage.error(message))
            <form id="authorize-form" method="post" action="/oauth/authorize">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields, binding: binding.value)]) { $1 }))
            \(HTMLPage.credentials(signedInAs: user?.username, returnTo: returnTo))
            \(HTMLPage.decisionButtons)
            \(HTMLPage.upstreamButtons(upstream))
            </form>
            \(user == nil && passwordResetEnabled ? HTMLPage.forgotPasswordLink : "")
            """
        let title = user == nil ? "Sign in to continue to \(authorization.client.name)" : "Allow \(authorization.client.name)?"
        var response = Self.html(HTMLPage.page(title: title, body: body), status: status, cookies: [binding.setCookie])
        if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
        return response
    }

    /// Where the browser goes after the decision, as a person reads it: the host of a web address,
    /// or the app that handles a private-use scheme.
    static func destination(_ redirectURI: String) -> String {
        guard let components = URLComponents(string: redirectURI), let scheme = components.scheme?.lowercased() else {
            return redirectURI
        }
        if scheme == "http" || scheme == "https", let host = components.host {
            return host + (components.port.map { ":\($0)" } ?? "")
        }
        return "the app that opens \(scheme): links"
    }

    func authorizeSubmit(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        guard isSameOrigin(request) else { return crossOriginRefusal() }
        let submitted = try await form(request)
        let authorization: AuthorizationRequest
        do {
            authorization = try await validate(submitted)
        } catch let problem as AuthorizationProblem {
            return problemResponse(problem)
        }
        guard
            auth.checkFormToken(
                submitted["form_token"], fields: authorization.fields, binding: Self.cookie(Self.formCookie, in: request))
        else {
            return try await consentPage(
                request, authorization,
                message: "This form expired, was changed or was opened in another browser; please try again.",
                status: .badRequest)
        }
        if let provider = submitted["upstream"] {
            // "Continue with" a provider: the press is the decision to allow, as Allow is.
            return try await startUpstream(
                request, provider: provider, continuing: .init(authorization: authorization.fields),
                refusal: { message, status in try await consentPage(request, authorization, message: message, status: status) })
        }
        if submitted["decision"] != "allow" {
            return redirect(authorization, ["error": "access_denied", "error_description": "The user declined"])
        }
        switch try await signIn(request, fields: submitted, address: context.clientAddress) {
        case .refused(let message, let status, let retryAfter):
            return try await consentPage(request, authorization, message: message, status: status, retryAfter: retryAfter)
        case .signedIn(let user, let cookie, let signedInAt):
            var response = try await grant(authorization, userID: user.id, request: request, signedInAt: signedInAt)
            if let cookie { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
            return response
        }
    }

    /// The allowed request's answer to the app: the code (or, implicit, the token) at its redirect URI.
    func grant(_ authorization: AuthorizationRequest, userID: String, request: Request, signedInAt: Int64?) async throws
        -> Response
    {
        let response: Response
        if authorization.responseType == "token" {
            let tokens = try await auth.issueTokens(
                client: authorization.client, userID: userID, scope: authorization.scope, refresh: false)
            var parameters = [
                "access_token": tokens["access_token"]?.stringValue ?? "", "token_type": "Bearer",
                "expires_in": "\(tokens["expires_in"]?.intValue ?? 0)", "scope": authorization.scope, "iss": issuer(),
            ]
            if let state = authorization.state { parameters["state"] = state }
            response = Self.redirect(to: authorization.redirectURI, fragment: parameters)
        } else {
            let code = Secrets.token(prefix: "opc_")
            try await auth.storage.saveCode(
                hash: Secrets.hash(code),
                StoredAuthorizationCode(
                    clientID: authorization.client.id, userID: userID, redirectURI: authorization.redirectURI,
                    scope: authorization.scope,
                    codeChallenge: authorization.codeChallenge,
                    expiresAt: AuthService.now() + AuthService.milliseconds(auth.configuration.authorizationCodeLifetime),
                    used: false, family: Secrets.token(prefix: "fam_")))
            try await openID.rememberCode(
                hash: Secrets.hash(code), scope: authorization.scope, nonce: authorization.nonce, request: request,
                signedInAt: signedInAt)
            response = redirect(authorization, ["code": code])
        }
        return response
    }

    enum SignInOutcome {
        /// The user, and a new session cookie and the session's start (milliseconds since 1970)
        /// when they signed in just now.
        case signedIn(StoredUser, cookie: String?, at: Int64? = nil)
        /// What to show, with the status (401, or 429 with the seconds to wait).
        case refused(String, HTTPResponse.Status, retryAfter: Int?)
    }

    /// Signs the browser user in from the form, or through their session.
    func signIn(_ request: Request, fields: [String: String], address: String) async throws -> SignInOutcome {
        if let user = try await browserUser(request) { return .signedIn(user, cookie: nil) }
        guard let username = fields["username"], let password = fields["password"], !username.isEmpty, !password.isEmpty else {
            return .refused("Enter your username and password.", .unauthorized, retryAfter: nil)
        }
        do {
            let user = try await auth.verifyPassword(
                username: username, password: password, address: address, method: "browser")
            let (cookie, started) = try await startSession(userID: user.id)
            return .signedIn(user, cookie: cookie, at: started)
        } catch AuthFailure.badCredentials {
            return .refused("The username or password is wrong.", .unauthorized, retryAfter: nil)
        } catch AuthFailure.rateLimited(let wait) {
            return .refused(
                "Too many failed attempts. Wait \(wait) seconds, then try again.", .tooManyRequests, retryAfter: wait)
        } catch AuthFailure.accountDisabled {
            return .refused(Self.disabledAccountMessage, .forbidden, retryAfter: nil)
        }
    }

    /// A new browser session for `userID`: its `Set-Cookie` and its start (milliseconds since 1970).
    func startSession(userID: String) async throws -> (cookie: String, startedAt: Int64) {
        let session = Secrets.token(prefix: "ops_")
        let lifetime = AuthService.milliseconds(auth.configuration.browserSessionLifetime)
        let started = AuthService.now()
        try await auth.storage.saveSession(hash: Secrets.hash(session), userID: userID, expiresAt: started + lifetime)
        return ("\(Self.sessionCookie)=\(session); Path=/; HttpOnly; SameSite=Lax; Max-Age=\(lifetime / 1000)", started)
    }

    /// The value of cookie `name`, if the request has it.
    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for part in header.split(separator: ";") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                if pair.hasPrefix(name + "=") { return String(pair.dropFirst(name.count + 1)) }
            }
        }
        return nil
    }

    /// The browser's form cookie, or a new one (with the `Set-Cookie` to send) when it has none.
    /// `pending` are cookies this response already sets (a form cookie among them is reused).
    func formBinding(_ request: Request, pending: [String?] = []) -> (value: String, setCookie: String?) {
        for case let cookie? in pending where cookie.hasPrefix(Self.formCookie + "=") {
            return (String(cookie.dropFirst(Self.formCookie.count + 1).prefix { $0 != ";" }), nil)
        }
        if let existing = Self.cookie(Self.formCookie, in: request), existing.count >= 16 { return (existing, nil) }
        let value = Secrets.token(prefix: "opf_")
        return (value, "\(Self.formCookie)=\(value); Path=/; HttpOnly; SameSite=Lax")
    }

    /// Whether a form post comes from the server's own pages: `Sec-Fetch-Site` must be `same-origin`
    /// (or `none`) and `Origin`, when sent, must be the public origin (without a configured public
    /// URL, the origin the browser used, `http://` + `Host`, when that host is an IP address or
    /// `localhost` (``cannotBeRebound(_:)``)). Clients that send neither header are
    /// not browsers and still need a form token bound to their form cookie.
    func isSameOrigin(_ request: Request) -> Bool {
        let site = request.headers[.secFetchSite]?.lowercased()
        if let site, site != "same-origin", site != "none" { return false }
        guard let origin = request.headers[.origin] else { return true }
        // A browser may hide the origin (`Origin: null`, e.g. under a strict referrer policy) while still
        // saying the post came from this site; `Sec-Fetch-Site` is set by the browser, never by a page.
        if origin == "null" { return site == "same-origin" }
        if origin == auth.publicBase.origin { return true }
        if auth.publicBase.configured == nil, let host = request.head.authority, origin == "http://" + host,
            Self.cannotBeRebound(host)
        {
            return true
        }
        return false
    }

    /// Whether a `Host` value names this machine in a way DNS cannot point elsewhere: an IP address
    /// literal or `localhost` (with any port). A page on an attacker's domain that DNS rebinding
    /// pointed at this server sends its own domain as `Host` and `Origin`, so without a configured
    /// public URL only such hosts are taken as the server's own origin.
    static func cannotBeRebound(_ authority: String) -> Bool {
        let host = FileLinks.hostName(of: authority.lowercased())
        if host == "localhost" || (host.hasPrefix("[") && host.hasSuffix("]")) { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in UInt8(part).map { String($0) == part } ?? false }
    }

    func crossOriginRefusal() -> Response {
        Self.html(
            HTMLPage.page(
                title: "Sign-in stopped",
                body:
                    "<p class=\"error\" id=\"error\" role=\"alert\">This form was sent from another site, so it was refused. Open the sign-in page again from the application.</p>"
            ), status: .forbidden)
    }

    /// The user of the browser's session; `nil` without one, and for a disabled user.
    func browserUser(_ request: Request) async throws -> StoredUser? {
        guard let value = Self.cookie(Self.sessionCookie, in: request) else { return nil }
        guard let userID = try await auth.storage.sessionUser(hash: Secrets.hash(value), now: AuthService.now()) else {
            return nil
        }
        guard let user = try await auth.storage.user(id: userID), !user.isDisabled else { return nil }
        return user
    }

    /// What the sign-in pages say to a person whose account is disabled (after a right password).
    static let disabledAccountMessage = "This account is disabled. Ask the server's operator to enable it."

    /// Ends the browser session. Then: `return_to`, a path of this server's sign-in pages (the
    /// "not you?" link), or `client_id` with a registered `redirect_uri`, or a page.
    func logout(_ request: Request) async throws -> Response {
        if let session = Self.cookie(Self.sessionCookie, in: request) {
            try await auth.storage.removeSession(hash: Secrets.hash(session))
        }
        let query = try request.queryFields()
        var response = Self.html(
            HTMLPage.page(title: "Signed out", body: "<p id=\"result\">You are signed out. You can close this page.</p>"))
        if let returnTo = query["return_to"], returnTo.hasPrefix("/oauth/authorize?") || returnTo.hasPrefix("/device"),
            !returnTo.contains("\\"), returnTo.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        {
            response = Response(status: .found, headers: [.location: returnTo, .cacheControl: "no-store"])
        } else if let clientID = query["client_id"], let target = query["redirect_uri"],
            let client = try await auth.storage.client(id: clientID),
            AuthService.redirectMatches(target, registered: client.redirectURIs)
        {
            response = Response(status: .found, headers: [.location: target, .cacheControl: "no-store"])
        }
        response.headers[.referrerPolicy] = "no-referrer"
        response.headers[.setCookie] = "\(Self.sessionCookie)=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"
        return response
    }
}
