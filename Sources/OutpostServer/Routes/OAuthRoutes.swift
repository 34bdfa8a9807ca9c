import Foundation
import HTTPTypes
import Hummingbird
import OutpostCore

/// The OAuth 2.0 authorization server: discovery (RFC 8414), the browser sign-in and consent page,
/// the token endpoint (authorization code with PKCE, refresh with rotation, password, client
/// credentials, device code), revocation (RFC 7009) and the device flow (RFC 8628).
///
/// The token, revocation and device authorization endpoints answer errors in RFC 6749's shape
/// (`{"error": "invalid_grant", "error_description": ...}`) rather than the Outpost envelope, so
/// that any OAuth client library understands them.
struct OAuthRoutes: Sendable {
    let auth: AuthService
    let maxBodyBytes: Int
    let openID: OpenIDProvider
    static let sessionCookie = "outpost_session"
    /// A random per-browser value that every form token is bound to (login CSRF protection).
    static let formCookie = "outpost_form"

    func add(to router: Router<OutpostRequestContext>) {
        router.get("/.well-known/oauth-authorization-server") { request, _ in discovery(request) }
        router.get("/oauth/authorize") { request, _ in try await authorizePage(request) }
        router.post("/oauth/authorize") { request, context in
            // 303 after the form post: the browser must not re-send the credentials to the client (RFC 9700 §4.12).
            var response = try await authorizeSubmit(request, context)
            if response.status == .found { response.status = .seeOther }
            return response
        }
        // The RFC 6749 endpoints: their errors in RFC 6749's shape, nothing cached.
        let endpoints = router.group().add(middleware: OAuthReplyMiddleware(logger: auth.logger))
        endpoints.post("/oauth/token") { request, context in try await token(request, context) }
        endpoints.post("/oauth/revoke") { request, context in try await revoke(request, context) }
        endpoints.post("/oauth/device_authorization") { request, context in try await deviceAuthorization(request, context) }
        router.get("/device") { request, _ in
            try await devicePage(request, userCode: try request.queryFields()["user_code"], message: nil)
        }
        router.post("/device") { request, context in try await deviceSubmit(request, context) }
        router.get("/oauth/logout") { request, _ in try await logout(request) }
    }

    /// The issuer identifier (RFC 8414 §2, RFC 9207): ``ServerConfiguration/publicURL``, or the
    /// address the server bound. Never taken from the request's `Host` header; the parameter is
    /// kept so that callers read the same either way.
    func issuer(_ request: Request? = nil) -> String { auth.issuer }

    func discovery(_ request: Request) -> Response {
        let issuer = self.issuer(request)
        return Response.json([
            "issuer": .string(issuer),
            "authorization_endpoint": .string(issuer + "/oauth/authorize"),
            "token_endpoint": .string(issuer + "/oauth/token"),
            "revocation_endpoint": .string(issuer + "/oauth/revoke"),
            "device_authorization_endpoint": .string(issuer + "/oauth/device_authorization"),
            "end_session_endpoint": .string(issuer + "/oauth/logout"),
            "jwks_uri": .string(issuer + OpenIDRoutes.jwksPath),
            "userinfo_endpoint": .string(issuer + OpenIDRoutes.userInfoPath),
            // An extension (RFC 8414 §2 allows more members): custom provider sign-in (`POST /auth/login`).
            "outpost_provider_login_endpoint": .string(issuer + "/auth/login"),
            "grant_types_supported": [
                "authorization_code", "implicit", "refresh_token", "password", "client_credentials",
                "urn:ietf:params:oauth:grant-type:device_code",
            ],
            "response_types_supported": ["code", "token"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": [
                .string(OpenIDProvider.scope), .string(Scope.recordsRead), .string(Scope.recordsWrite), .string(Scope.profile),
            ],
            "authorization_response_iss_parameter_supported": true,
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        ])
    }

    func form(_ request: Request) async throws -> [String: String] {
        try await request.formFields(limit: maxBodyBytes)
    }

    // MARK: Token endpoint

    func token(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields = try await form(request)
        guard let grant = fields["grant_type"] else { throw OAuthError.invalidRequest("grant_type is missing") }
        let client = try await auth.authenticateClient(
            fields, authorization: request.headers[.authorization], address: context.clientAddress)
        let reply: JSONValue
        switch grant {
        case "authorization_code":
            try require(client, "authorization_code")
            reply = try await exchangeCode(fields, client: client, issuer: issuer(request))
        case "refresh_token":
            try require(client, "refresh_token")
            guard let refreshToken = fields["refresh_token"] else { throw OAuthError.invalidRequest("refresh_token is missing") }
            reply = try await openID.afterRefresh(
                auth.refresh(refreshToken, client: client), client: client, issuer: issuer(request))
        case "password":
            try require(client, "password")
            guard let username = fields["username"], let password = fields["password"] else {
                throw OAuthError.invalidRequest("username and password are required")
            }
            let scope = try AuthService.grantedScope(requested: fields["scope"], client: client)
            let user = try await auth.verifyPassword(username: username, password: password, address: context.clientAddress)
            reply = try await auth.issueTokens(client: client, userID: user.id, scope: scope)
        case "client_credentials":
            try require(client, "client_credentials")
            guard client.isConfidential else {
                throw OAuthError.unauthorizedClient("client_credentials needs a confidential client")
            }
            let scope = try AuthService.grantedScope(requested: fields["scope"], client: client)
            reply = try await auth.issueTokens(client: client, userID: nil, scope: scope, refresh: false)
        case "urn:ietf:params:oauth:grant-type:device_code":
            try require(client, "device_code")
            reply = try await pollDevice(fields, client: client)
        default:
            throw OAuthError(code: "unsupported_grant_type", description: "grant_type '\(grant)' is not supported")
        }
        return Response.json(reply, headers: [.cacheControl: "no-store"])
    }

    func require(_ client: OAuthClient, _ grant: String) throws {
        guard client.grants.contains(grant) else {
            if grant == "password" {
                throw OAuthError.unauthorizedClient(
                    "Client '\(client.id)' may not use the password grant: it is legacy (RFC 9700 §2.4) and off unless a client "
                        + "opts in (outpost clients add NAME --grant password); prefer the browser or device flow")
            }
            throw OAuthError.unauthorizedClient("Client '\(client.id)' may not use the \(grant) grant")
        }
    }

    func exchangeCode(_ fields: [String: String], client: OAuthClient, issuer: String) async throws -> JSONValue {
        guard let code = fields["code"], let redirectURI = fields["redirect_uri"] else {
            throw OAuthError.invalidRequest("code and redirect_uri are required")
        }
        let hash = Secrets.hash(code)
        guard let stored = try await auth.storage.useCode(hash: hash) else {
            if let family = try await auth.storage.codeFamily(hash: hash) {
                // A second use means the code leaked: end what the first use obtained (RFC 6749 §4.1.2).
                try await auth.storage.revokeFamily(family)
                auth.logger.warning("authorization code replayed; its tokens are revoked", metadata: ["client": "\(client.id)"])
                throw OAuthError.invalidGrant(
                    "The authorization code was already used; the tokens issued for it are now revoked. Sign in again")
            }
            throw OAuthError.invalidGrant("The authorization code is unknown or was already used")
        }
        guard stored.clientID == client.id, stored.expiresAt > AuthService.now() else {
            throw OAuthError.invalidGrant("The authorization code has expired or belongs to another client")
        }
        guard stored.redirectURI == redirectURI else {
            throw OAuthError.invalidGrant("redirect_uri must be the one sent to /oauth/authorize")
        }
        let verifier = fields["code_verifier"]
        if let verifier, !Self.isValidVerifier(verifier) {
            throw OAuthError.invalidGrant(
                "code_verifier must be 43–128 characters of A–Z, a–z, 0–9, '-', '.', '_', '~' (RFC 7636 §4.1)")
        }
        if let challenge = stored.codeChallenge {
            guard let verifier, Secrets.equal(Secrets.s256(verifier), challenge) else {
                throw OAuthError.invalidGrant("The PKCE code_verifier does not match the code_challenge")
            }
        } else if verifier != nil {
            // RFC 9700 §4.8.2: a verifier for a code issued without a challenge is a downgrade attempt.
            throw OAuthError.invalidGrant("This code was issued without a code_challenge, so a code_verifier is refused")
        }
        let reply = try await auth.issueTokens(client: client, userID: stored.userID, scope: stored.scope, family: stored.family)
        return try await openID.afterCodeExchange(reply, codeHash: Secrets.hash(code), client: client, issuer: issuer)
    }

    /// RFC 7636 §4.1: 43–128 unreserved characters.
    static func isValidVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count)
            && verifier.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                    return true
                default:
                    return false
                }
            }
    }

    func revoke(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields = try await form(request)
        let client = try await auth.authenticateClient(
            fields, authorization: request.headers[.authorization], address: context.clientAddress)
        guard let token = fields["token"] else { throw OAuthError.invalidRequest("token is missing") }
        try await auth.revoke(token, client: client)
        return Response(status: .ok, headers: [.cacheControl: "no-store"])
    }

    // MARK: Device flow

    func deviceAuthorization(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields = try await form(request)
        let client = try await auth.authenticateClient(
            fields, authorization: request.headers[.authorization], address: context.clientAddress)
        try require(client, "device_code")
        let scope = try AuthService.grantedScope(requested: fields["scope"], client: client)
        let deviceCode = Secrets.token(prefix: "opd_")
        let lifetime = AuthService.milliseconds(auth.configuration.deviceCodeLifetime)
        var userCode = Secrets.userCode()
        while try await auth.storage.deviceCode(userCode: userCode) != nil { userCode = Secrets.userCode() }
        try await auth.storage.saveDeviceCode(
            StoredDeviceCode(
                hash: Secrets.hash(deviceCode), userCode: userCode, clientID: client.id, scope: scope,
                expiresAt: AuthService.now() + lifetime, intervalSeconds: auth.configuration.deviceInterval, lastPoll: 0,
                status: "pending", userID: nil))
        let verification = issuer(request) + "/device"
        return Response.json(
            [
                "device_code": .string(deviceCode), "user_code": .string(userCode),
                "verification_uri": .string(verification),
                "verification_uri_complete": .string(verification + "?user_code=" + userCode),
                "expires_in": .int(Int(lifetime / 1000)), "interval": .int(auth.configuration.deviceInterval),
            ], headers: [.cacheControl: "no-store"])
    }

    func pollDevice(_ fields: [String: String], client: OAuthClient) async throws -> JSONValue {
        guard let code = fields["device_code"] else { throw OAuthError.invalidRequest("device_code is missing") }
        let hash = Secrets.hash(code)
        guard let stored = try await auth.storage.deviceCode(hash: hash), stored.clientID == client.id else {
            throw OAuthError.invalidGrant("The device code is unknown")
        }
        let now = AuthService.now()
        guard stored.expiresAt > now else {
            throw OAuthError(code: "expired_token", description: "The device code expired; start again")
        }
        switch stored.status {
        case "denied":
            throw OAuthError(code: "access_denied", description: "The user declined")
        case "used":
            throw OAuthError.invalidGrant("The device code was already exchanged")
        case "approved":
            try await auth.storage.updateDeviceCode(hash: hash, status: "used", userID: nil, lastPoll: now, interval: nil)
            return try await auth.issueTokens(client: client, userID: stored.userID, scope: stored.scope)
        default:
            if stored.lastPoll > 0, now - stored.lastPoll < Int64(stored.intervalSeconds) * 1000 {
                try await auth.storage.updateDeviceCode(
                    hash: hash, status: nil, userID: nil, lastPoll: now, interval: stored.intervalSeconds + 5)
                throw OAuthError(code: "slow_down", description: "Poll every \(stored.intervalSeconds + 5) seconds")
            }
            try await auth.storage.updateDeviceCode(hash: hash, status: nil, userID: nil, lastPoll: now, interval: nil)
            throw OAuthError(code: "authorization_pending", description: "The user has not finished signing in yet")
        }
    }

    /// Step one of the device page: the code (and, without a session, the credentials).
    func devicePage(_ request: Request, userCode: String?, message: String?, status: HTTPResponse.Status = .ok) async throws
        -> Response
    {
        let sessionUser = try await browserUser(request)
        let binding = formBinding(request)
        let fields = ["purpose": "device"]
        let returnTo = "/device" + (userCode.map { "?" + URLEncodedForm.encode([("user_code", $0)]) } ?? "")
        let body = """
            <p>Enter the code your device shows. Next you will see which application asks for access, and decide.</p>
            \(HTMLPage.error(message))
            <form id="device-form" method="post" action="/device">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields, binding: binding.value)]) { $1 }))
            <label for="user_code">Code from your device</label>
            <input type="text" id="user_code" name="user_code" value="\(HTMLPage.escape(userCode ?? ""))" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required>
            \(HTMLPage.credentials(signedInAs: sessionUser?.username, returnTo: returnTo))
            \(HTMLPage.continueButton)
            </form>
            """
        return Self.html(HTMLPage.page(title: "Connect a device", body: body), status: status, cookies: [binding.setCookie])
    }

    /// Step two: the signed-in user sees the client and the access it asks for, and confirms.
    func deviceConfirmPage(
        _ request: Request, code: StoredDeviceCode, client: OAuthClient, user: StoredUser, message: String? = nil,
        status: HTTPResponse.Status = .ok, cookies: [String?] = []
    ) -> Response {
        let binding = formBinding(request, pending: cookies)
        let hidden = ["purpose": "device_confirm", "user_code": code.userCode]
        let signed = hidden.merging(["user": user.id]) { $1 }
        let body = """
            <p id="client"><strong>\(HTMLPage.escape(client.name))</strong> asks to use your account on the device showing the code <strong id="confirm-code">\(HTMLPage.escape(code.userCode))</strong>.</p>
            \(HTMLPage.scopeList(code.scope))
            \(HTMLPage.error(message))
            <form id="device-confirm-form" method="post" action="/device">
            \(HTMLPage.hidden(hidden.merging(["form_token": auth.formToken(for: signed, binding: binding.value)]) { $1 }))
            \(HTMLPage.credentials(signedInAs: user.username, returnTo: "/device?" + URLEncodedForm.encode([("user_code", code.userCode)])))
            \(HTMLPage.decisionButtons)
            </form>
            """
        return Self.html(
            HTMLPage.page(title: "Allow \(client.name) on your device?", body: body), status: status,
            cookies: cookies + [binding.setCookie])
    }

    func deviceSubmit(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        guard isSameOrigin(request) else { return crossOriginRefusal() }
        let fields = try await form(request)
        if fields["purpose"] == "device_confirm" { return try await deviceDecide(request, fields) }
        guard
            auth.checkFormToken(
                fields["form_token"], fields: ["purpose": "device"], binding: Self.cookie(Self.formCookie, in: request))
        else {
            return try await devicePage(
                request, userCode: fields["user_code"],
                message: "This form expired or was opened in another browser; please try again.",
                status: .badRequest)
        }
        // Guessing user codes is limited per address, like passwords.
        let guessKey = "device:\(context.clientAddress)"
        if let wait = try await auth.limiter.wait([(guessKey, auth.configuration.attemptsPerAccount)]) {
            var response = try await devicePage(
                request, userCode: fields["user_code"], message: "Too many wrong codes. Wait \(wait) seconds and try again.",
                status: .tooManyRequests)
            response.headers[.retryAfter] = "\(wait)"
            return response
        }
        let userCode = Self.normalizedUserCode(fields["user_code"] ?? "")
        guard let stored = try await auth.storage.deviceCode(userCode: userCode), stored.status == "pending",
            stored.expiresAt > AuthService.now(), let client = try await auth.storage.client(id: stored.clientID)
        else {
            try await auth.limiter.fail([guessKey])
            return try await devicePage(
                request, userCode: fields["user_code"], message: "That code is unknown or has expired. Check your device.",
                status: .badRequest)
        }
        switch try await signIn(request, fields: fields, address: context.clientAddress) {
        case .refused(let message, let status, let retryAfter):
            var response = try await devicePage(request, userCode: fields["user_code"], message: message, status: status)
            if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
            return response
        case .signedIn(let user, let cookie, _):
            return deviceConfirmPage(request, code: stored, client: client, user: user, cookies: [cookie])
        }
    }

    /// The confirm step's answer: allow or deny, for the user signed in when the page was shown.
    func deviceDecide(_ request: Request, _ fields: [String: String]) async throws -> Response {
        let userCode = fields["user_code"] ?? ""
        let user = try await browserUser(request)
        let signed = ["purpose": "device_confirm", "user_code": userCode, "user": user?.id ?? ""]
        guard let user,
            auth.checkFormToken(fields["form_token"], fields: signed, binding: Self.cookie(Self.formCookie, in: request))
        else {
            return try await devicePage(
                request, userCode: userCode, message: "This form expired or you were signed out; please try again.",
                status: .badRequest)
        }
        guard let stored = try await auth.storage.deviceCode(userCode: userCode), stored.status == "pending",
            stored.expiresAt > AuthService.now(), let client = try await auth.storage.client(id: stored.clientID)
        else {
            return try await devicePage(
                request, userCode: userCode, message: "That code is unknown or has expired. Check your device.",
                status: .badRequest)
        }
        switch fields["decision"] {
        case "deny":
            try await auth.storage.updateDeviceCode(
                hash: stored.hash, status: "denied", userID: nil, lastPoll: nil, interval: nil)
            return Self.html(
                HTMLPage.page(
                    title: "Device not connected",
                    body: "<p id=\"result\">\(HTMLPage.escape(client.name)) was not given access. You can close this page.</p>"))
        case "allow":
            try await auth.storage.updateDeviceCode(
                hash: stored.hash, status: "approved", userID: user.id, lastPoll: nil, interval: nil)
            return Self.html(
                HTMLPage.page(
                    title: "Device connected",
                    body: """
                        <p id="result">\(HTMLPage.escape(client.name)) on your device is signed in as <strong>\(HTMLPage.escape(user.username))</strong>. You can close this page.</p>
                        """))
        default:
            return deviceConfirmPage(
                request, code: stored, client: client, user: user, message: "Choose Allow or Deny.", status: .badRequest)
        }
    }

    /// `abcd-efgh`, ` ABCDEFGH ` → `ABCD-EFGH`.
    static func normalizedUserCode(_ text: String) -> String {
        let letters = text.uppercased().filter { $0.isLetter }
        guard letters.count == 8 else { return text.uppercased().trimmingCharacters(in: .whitespaces) }
        return String(letters.prefix(4)) + "-" + String(letters.suffix(4))
    }

    // MARK: Authorization endpoint

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
            </form>
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
        if submitted["decision"] != "allow" {
            return redirect(authorization, ["error": "access_denied", "error_description": "The user declined"])
        }
        let user: StoredUser
        let cookie: String?
        let signedInAt: Int64?
        switch try await signIn(request, fields: submitted, address: context.clientAddress) {
        case .refused(let message, let status, let retryAfter):
            return try await consentPage(request, authorization, message: message, status: status, retryAfter: retryAfter)
        case .signedIn(let signedIn, let newCookie, let at):
            user = signedIn
            cookie = newCookie
            signedInAt = at
        }
        var response: Response
        if authorization.responseType == "token" {
            let tokens = try await auth.issueTokens(
                client: authorization.client, userID: user.id, scope: authorization.scope, refresh: false)
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
                    clientID: authorization.client.id, userID: user.id, redirectURI: authorization.redirectURI,
                    scope: authorization.scope,
                    codeChallenge: authorization.codeChallenge,
                    expiresAt: AuthService.now() + AuthService.milliseconds(auth.configuration.authorizationCodeLifetime),
                    used: false, family: Secrets.token(prefix: "fam_")))
            try await openID.rememberCode(
                hash: Secrets.hash(code), scope: authorization.scope, nonce: authorization.nonce, request: request,
                signedInAt: signedInAt)
            response = redirect(authorization, ["code": code])
        }
        if let cookie { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
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
            let user = try await auth.verifyPassword(username: username, password: password, address: address)
            let session = Secrets.token(prefix: "ops_")
            let lifetime = AuthService.milliseconds(auth.configuration.browserSessionLifetime)
            let started = AuthService.now()
            try await auth.storage.saveSession(hash: Secrets.hash(session), userID: user.id, expiresAt: started + lifetime)
            return .signedIn(
                user, cookie: "\(Self.sessionCookie)=\(session); Path=/; HttpOnly; SameSite=Lax; Max-Age=\(lifetime / 1000)",
                at: started)
        } catch AuthFailure.badCredentials {
            return .refused("The username or password is wrong.", .unauthorized, retryAfter: nil)
        } catch AuthFailure.rateLimited(let wait) {
            return .refused(
                "Too many failed attempts. Wait \(wait) seconds, then try again.", .tooManyRequests, retryAfter: wait)
        }
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
    /// URL, the origin the browser used: `http://` + `Host`). Clients that send neither header are
    /// not browsers and still need a form token bound to their form cookie.
    func isSameOrigin(_ request: Request) -> Bool {
        let site = request.headers[.secFetchSite]?.lowercased()
        if let site, site != "same-origin", site != "none" { return false }
        guard let origin = request.headers[.origin] else { return true }
        // A browser may hide the origin (`Origin: null`, e.g. under a strict referrer policy) while still
        // saying the post came from this site; `Sec-Fetch-Site` is set by the browser, never by a page.
        if origin == "null" { return site == "same-origin" }
        if origin == auth.publicBase.origin { return true }
        if auth.publicBase.configured == nil, let host = request.head.authority, origin == "http://" + host { return true }
        return false
    }

    func crossOriginRefusal() -> Response {
        Self.html(
            HTMLPage.page(
                title: "Sign-in stopped",
                body:
                    "<p class=\"error\" id=\"error\" role=\"alert\">This form was sent from another site, so it was refused. Open the sign-in page again from the application.</p>"
            ), status: .forbidden)
    }

    func browserUser(_ request: Request) async throws -> StoredUser? {
        guard let value = Self.cookie(Self.sessionCookie, in: request) else { return nil }
        guard let userID = try await auth.storage.sessionUser(hash: Secrets.hash(value), now: AuthService.now()) else {
            return nil
        }
        return try await auth.storage.user(id: userID)
    }

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

    // MARK: Rendering

    func problemResponse(_ problem: AuthorizationProblem) -> Response {
        switch problem {
        case .page(let message):
            return Self.html(
                HTMLPage.page(
                    title: "Sign-in stopped",
                    body: "<p class=\"error\" id=\"error\" role=\"alert\">\(HTMLPage.escape(message))</p>"),
                status: .badRequest)
        case .redirect(let code, let description, let request):
            return redirect(request, ["error": code, "error_description": description])
        }
    }

    /// Back to the client with `parameters`, the `state` and the issuer (`iss`, RFC 9207).
    func redirect(_ authorization: AuthorizationRequest, _ parameters: [String: String]) -> Response {
        var parameters = parameters
        if let state = authorization.state { parameters["state"] = state }
        parameters["iss"] = issuer()
        if authorization.responseType == "token" {
            return Self.redirect(to: authorization.redirectURI, fragment: parameters)
        }
        let separator = authorization.redirectURI.contains("?") ? "&" : "?"
        let query = URLEncodedForm.encode(parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return Response(
            status: .found,
            headers: [
                .location: authorization.redirectURI + separator + query, .cacheControl: "no-store",
                .referrerPolicy: "no-referrer",
            ])
    }

    static func redirect(to uri: String, fragment parameters: [String: String]) -> Response {
        let fragment = URLEncodedForm.encode(parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return Response(
            status: .found,
            headers: [.location: uri + "#" + fragment, .cacheControl: "no-store", .referrerPolicy: "no-referrer"])
    }

    /// An HTML page that no other site may frame, that sends no `Referer` to any other site (its URL
    /// carries `state` and the client's parameters), and that the browser does not cache.
    ///
    /// `same-origin` rather than `no-referrer`: under `no-referrer` Chromium posts the page's own
    /// forms with `Origin: null`, which the same-origin check could not tell from a sandboxed page.
    static func html(_ text: String, status: HTTPResponse.Status = .ok, cookies: [String?] = []) -> Response {
        var response = Response.bytes(
            Data(text.utf8), contentType: "text/html; charset=utf-8", status: status,
            headers: [
                .cacheControl: "no-store", .referrerPolicy: "same-origin", .xFrameOptions: "DENY",
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
                .xContentTypeOptions: "nosniff",
            ])
        for case let cookie? in cookies { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return response
    }
}
