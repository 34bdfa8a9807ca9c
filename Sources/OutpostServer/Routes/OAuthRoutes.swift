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

    func add(to router: Router<OutpostRequestContext>) {
        router.get("/.well-known/oauth-authorization-server") { request, _ in discovery(request) }
        router.get("/oauth/authorize") { request, _ in try await authorizePage(request) }
        router.post("/oauth/authorize") { request, context in try await authorizeSubmit(request, context) }
        router.post("/oauth/token") { request, context in await oauthReply { try await token(request, context) } }
        router.post("/oauth/revoke") { request, _ in await oauthReply { try await revoke(request) } }
        router.post("/oauth/device_authorization") { request, _ in await oauthReply { try await deviceAuthorization(request) } }
        router.get("/device") { request, _ in
            try await devicePage(request, userCode: UserRoutes.query(request)["user_code"], message: nil)
        }
        router.post("/device") { request, context in try await deviceSubmit(request, context) }
        router.get("/oauth/logout") { request, _ in try await logout(request) }
    }

    static func issuer(_ request: Request) -> String { "http://\(request.head.authority ?? "127.0.0.1")" }

    func discovery(_ request: Request) -> Response {
        let issuer = Self.issuer(request)
        return Response.json([
            "issuer": .string(issuer),
            "authorization_endpoint": .string(issuer + "/oauth/authorize"),
            "token_endpoint": .string(issuer + "/oauth/token"),
            "revocation_endpoint": .string(issuer + "/oauth/revoke"),
            "device_authorization_endpoint": .string(issuer + "/oauth/device_authorization"),
            "end_session_endpoint": .string(issuer + "/oauth/logout"),
            "grant_types_supported": [
                "authorization_code", "implicit", "refresh_token", "password", "client_credentials",
                "urn:ietf:params:oauth:grant-type:device_code",
            ],
            "response_types_supported": ["code", "token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        ])
    }

    /// Runs an RFC 6749 endpoint, rendering its failures in RFC 6749's shape.
    func oauthReply(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as OAuthError {
            var headers = error.headers
            headers[.cacheControl] = "no-store"
            return Response.json(
                ["error": .string(error.code), "error_description": .string(error.description)], status: error.status,
                headers: headers)
        } catch AuthFailure.badCredentials {
            return Response.json(
                ["error": "invalid_grant", "error_description": "The username or password is wrong"], status: .badRequest)
        } catch AuthFailure.rateLimited(let wait) {
            return Response.json(
                ["error": "slow_down", "error_description": .string("Too many sign-in attempts; wait \(wait) s and try again")],
                status: .tooManyRequests, headers: [.retryAfter: "\(wait)"])
        } catch let error as ServerError {
            return Response.json(
                ["error": .string(error.code), "error_description": .string(error.message)], status: error.status)
        } catch {
            auth.logger.error("token endpoint failed", metadata: ["error": "\(error)"])
            return Response.json(
                ["error": "server_error", "error_description": "The server failed; its log has the details"],
                status: .internalServerError)
        }
    }

    func form(_ request: Request) async throws -> [String: String] {
        FormBody.parse(try await request.collectBody(limit: maxBodyBytes))
    }

    // MARK: Token endpoint

    func token(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields = try await form(request)
        guard let grant = fields["grant_type"] else { throw OAuthError.invalidRequest("grant_type is missing") }
        let client = try await auth.authenticateClient(fields, authorization: request.headers[.authorization])
        let reply: JSONValue
        switch grant {
        case "authorization_code":
            try require(client, "authorization_code")
            reply = try await exchangeCode(fields, client: client, request: request)
        case "refresh_token":
            try require(client, "refresh_token")
            guard let refreshToken = fields["refresh_token"] else { throw OAuthError.invalidRequest("refresh_token is missing") }
            reply = try await openID.afterRefresh(auth.refresh(refreshToken, client: client), client: client, request: request)
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
            throw OAuthError.unauthorizedClient("Client '\(client.id)' may not use the \(grant) grant")
        }
    }

    func exchangeCode(_ fields: [String: String], client: OAuthClient, request: Request) async throws -> JSONValue {
        guard let code = fields["code"], let redirectURI = fields["redirect_uri"] else {
            throw OAuthError.invalidRequest("code and redirect_uri are required")
        }
        guard let stored = try await auth.storage.useCode(hash: Secrets.hash(code)) else {
            throw OAuthError.invalidGrant("The authorization code is unknown or was already used")
        }
        guard stored.clientID == client.id, stored.expiresAt > AuthService.now() else {
            throw OAuthError.invalidGrant("The authorization code has expired or belongs to another client")
        }
        guard stored.redirectURI == redirectURI else {
            throw OAuthError.invalidGrant("redirect_uri must be the one sent to /oauth/authorize")
        }
        if let challenge = stored.codeChallenge {
            guard let verifier = fields["code_verifier"], Secrets.equal(Secrets.s256(verifier), challenge) else {
                throw OAuthError.invalidGrant("The PKCE code_verifier does not match the code_challenge")
            }
        }
        let reply = try await auth.issueTokens(client: client, userID: stored.userID, scope: stored.scope)
        return try await openID.afterCodeExchange(reply, codeHash: Secrets.hash(code), client: client, request: request)
    }

    func revoke(_ request: Request) async throws -> Response {
        let fields = try await form(request)
        let client = try await auth.authenticateClient(fields, authorization: request.headers[.authorization])
        guard let token = fields["token"] else { throw OAuthError.invalidRequest("token is missing") }
        try await auth.revoke(token, client: client)
        return Response(status: .ok, headers: [.cacheControl: "no-store"])
    }

    // MARK: Device flow

    func deviceAuthorization(_ request: Request) async throws -> Response {
        let fields = try await form(request)
        let client = try await auth.authenticateClient(fields, authorization: request.headers[.authorization])
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
        let verification = Self.issuer(request) + "/device"
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

    func devicePage(_ request: Request, userCode: String?, message: String?, status: HTTPResponse.Status = .ok) async throws
        -> Response
    {
        let sessionUser = try await browserUser(request)
        let fields = ["purpose": "device"]
        let body = """
            <p>Enter the code your device shows, then sign in to let it use your account.</p>
            \(HTMLPage.error(message))
            <form method="post" action="/device">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields)]) { $1 }))
            <label for="user_code">Code from your device</label>
            <input type="text" id="user_code" name="user_code" value="\(HTMLPage.escape(userCode ?? ""))" autocomplete="one-time-code" required>
            \(HTMLPage.credentials(signedInAs: sessionUser?.username))
            \(HTMLPage.decisionButtons)
            </form>
            """
        return Self.html(HTMLPage.page(title: "Connect a device", body: body), status: status)
    }

    func deviceSubmit(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let fields = try await form(request)
        guard auth.checkFormToken(fields["form_token"], fields: ["purpose": "device"]) else {
            return try await devicePage(
                request, userCode: fields["user_code"], message: "This form expired; please try again.", status: .badRequest)
        }
        let userCode = (fields["user_code"] ?? "").uppercased().trimmingCharacters(in: .whitespaces)
        guard let stored = try await auth.storage.deviceCode(userCode: userCode), stored.status == "pending",
            stored.expiresAt > AuthService.now()
        else {
            return try await devicePage(
                request, userCode: fields["user_code"], message: "That code is unknown or has expired. Check your device.",
                status: .badRequest)
        }
        if fields["decision"] == "deny" {
            try await auth.storage.updateDeviceCode(
                hash: stored.hash, status: "denied", userID: nil, lastPoll: nil, interval: nil)
            return Self.html(
                HTMLPage.page(
                    title: "Device not connected", body: "<p>The device was not given access. You can close this page.</p>"))
        }
        let (user, cookie) = try await signIn(request, fields: fields, address: context.clientAddress)
        guard let user else {
            return try await devicePage(
                request, userCode: fields["user_code"], message: cookie ?? "The username or password is wrong.",
                status: .unauthorized)
        }
        try await auth.storage.updateDeviceCode(
            hash: stored.hash, status: "approved", userID: user.id, lastPoll: nil, interval: nil)
        var response = Self.html(
            HTMLPage.page(
                title: "Device connected",
                body:
                    "<p>Your device is signed in as <strong>\(HTMLPage.escape(user.username))</strong>. You can close this page.</p>"
            ))
        if let cookie { response.headers[.setCookie] = cookie }
        return response
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
                guard parameters["code_challenge_method"] == "S256", challenge.count == 43 else {
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
            let authorization = try await validate(UserRoutes.query(request))
            if let error = try OpenIDProvider.promptNone(request, signedIn: try await browserUser(request) != nil) {
                return Self.redirect(authorization, error)
            }
            return try await consentPage(request, authorization, message: nil)
        } catch let problem as AuthorizationProblem {
            return problemResponse(problem)
        }
    }

    func consentPage(
        _ request: Request, _ authorization: AuthorizationRequest, message: String?, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let user = try await browserUser(request)
        let fields = authorization.fields
        let scopes = authorization.scope.split(separator: " ").map { "<li>\(HTMLPage.escape(String($0)))</li>" }.joined()
        let body = """
            <p><strong>\(HTMLPage.escape(authorization.client.name))</strong> wants to use your account\(scopes.isEmpty ? "." : ", to:")</p>
            \(scopes.isEmpty ? "" : "<ul>\(scopes)</ul>")
            \(HTMLPage.error(message))
            <form method="post" action="/oauth/authorize">
            \(HTMLPage.hidden(fields.merging(["form_token": auth.formToken(for: fields)]) { $1 }))
            \(HTMLPage.credentials(signedInAs: user?.username))
            \(HTMLPage.decisionButtons)
            </form>
            """
        return Self.html(HTMLPage.page(title: "Sign in", body: body), status: status)
    }

    func authorizeSubmit(_ request: Request, _ context: OutpostRequestContext) async throws -> Response {
        let submitted = try await form(request)
        let authorization: AuthorizationRequest
        do {
            authorization = try await validate(submitted)
        } catch let problem as AuthorizationProblem {
            return problemResponse(problem)
        }
        guard auth.checkFormToken(submitted["form_token"], fields: authorization.fields) else {
            return try await consentPage(
                request, authorization, message: "This form expired or was changed; please try again.", status: .badRequest)
        }
        if submitted["decision"] != "allow" {
            return Self.redirect(authorization, ["error": "access_denied", "error_description": "The user declined"])
        }
        let (user, cookie) = try await signIn(request, fields: submitted, address: context.clientAddress)
        guard let user else {
            return try await consentPage(
                request, authorization, message: cookie ?? "The username or password is wrong.", status: .unauthorized)
        }
        var response: Response
        if authorization.responseType == "token" {
            let tokens = try await auth.issueTokens(
                client: authorization.client, userID: user.id, scope: authorization.scope, refresh: false)
            var parameters = [
                "access_token": tokens["access_token"]?.stringValue ?? "", "token_type": "Bearer",
                "expires_in": "\(tokens["expires_in"]?.intValue ?? 0)", "scope": authorization.scope,
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
                    used: false))
            try await openID.rememberCode(
                hash: Secrets.hash(code), scope: authorization.scope, nonce: authorization.nonce, request: request,
                freshSignIn: cookie != nil)
            response = Self.redirect(authorization, ["code": code])
        }
        if let cookie { response.headers[.setCookie] = cookie }
        return response
    }

    /// Signs the browser user in from the form (or their session). Returns the user and a new
    /// session cookie, or `nil` and the message to show.
    func signIn(_ request: Request, fields: [String: String], address: String) async throws -> (StoredUser?, String?) {
        if let user = try await browserUser(request) { return (user, nil) }
        guard let username = fields["username"], let password = fields["password"], !username.isEmpty else {
            return (nil, "Enter your username and password.")
        }
        do {
            let user = try await auth.verifyPassword(username: username, password: password, address: address)
            let session = Secrets.token(prefix: "ops_")
            let lifetime = AuthService.milliseconds(auth.configuration.browserSessionLifetime)
            try await auth.storage.saveSession(
                hash: Secrets.hash(session), userID: user.id, expiresAt: AuthService.now() + lifetime)
            return (user, "\(Self.sessionCookie)=\(session); Path=/; HttpOnly; SameSite=Lax; Max-Age=\(lifetime / 1000)")
        } catch AuthFailure.badCredentials {
            return (nil, "The username or password is wrong.")
        } catch AuthFailure.rateLimited(let wait) {
            return (nil, "Too many attempts. Wait \(wait) seconds and try again.")
        }
    }

    func browserUser(_ request: Request) async throws -> StoredUser? {
        guard let cookies = request.headers[.cookie] else { return nil }
        for part in cookies.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            guard pair.hasPrefix(Self.sessionCookie + "=") else { continue }
            let value = String(pair.dropFirst(Self.sessionCookie.count + 1))
            guard let userID = try await auth.storage.sessionUser(hash: Secrets.hash(value), now: AuthService.now()) else {
                return nil
            }
            return try await auth.storage.user(id: userID)
        }
        return nil
    }

    func logout(_ request: Request) async throws -> Response {
        if let cookies = request.headers[.cookie] {
            for part in cookies.split(separator: ";") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                if pair.hasPrefix(Self.sessionCookie + "=") {
                    try await auth.storage.removeSession(hash: Secrets.hash(String(pair.dropFirst(Self.sessionCookie.count + 1))))
                }
            }
        }
        let query = UserRoutes.query(request)
        var response = Self.html(HTMLPage.page(title: "Signed out", body: "<p>You are signed out. You can close this page.</p>"))
        if let clientID = query["client_id"], let target = query["redirect_uri"],
            let client = try await auth.storage.client(id: clientID),
            AuthService.redirectMatches(target, registered: client.redirectURIs)
        {
            response = Response(status: .found, headers: [.location: target])
        }
        response.headers[.setCookie] = "\(Self.sessionCookie)=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"
        return response
    }

    // MARK: Rendering

    func problemResponse(_ problem: AuthorizationProblem) -> Response {
        switch problem {
        case .page(let message):
            return Self.html(
                HTMLPage.page(
                    title: "Sign-in stopped", body: "<p class=\"error\" role=\"alert\">\(HTMLPage.escape(message))</p>"),
                status: .badRequest)
        case .redirect(let code, let description, let request):
            return Self.redirect(request, ["error": code, "error_description": description])
        }
    }

    static func redirect(_ authorization: AuthorizationRequest, _ parameters: [String: String]) -> Response {
        var parameters = parameters
        if let state = authorization.state { parameters["state"] = state }
        if authorization.responseType == "token" {
            return redirect(to: authorization.redirectURI, fragment: parameters)
        }
        let separator = authorization.redirectURI.contains("?") ? "&" : "?"
        let query = FormBody.encode(parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return Response(
            status: .found, headers: [.location: authorization.redirectURI + separator + query, .cacheControl: "no-store"])
    }

    static func redirect(to uri: String, fragment parameters: [String: String]) -> Response {
        let fragment = FormBody.encode(parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return Response(status: .found, headers: [.location: uri + "#" + fragment, .cacheControl: "no-store"])
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response.bytes(
            Data(text.utf8), contentType: "text/html; charset=utf-8", status: status,
            headers: [
                .cacheControl: "no-store", HTTPField.Name("X-Frame-Options")!: "DENY",
                HTTPField.Name("Content-Security-Policy")!: "default-src 'none'; style-src 'unsafe-inline'",
            ])
    }
}
