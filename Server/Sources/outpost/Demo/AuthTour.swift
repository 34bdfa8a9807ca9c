import Foundation
import Logging
import Outpost
import OutpostServer

/// Sign-in without a person at the keyboard, a token refresh (forced, then transparent), a custom
/// provider, record ownership, and OpenID Connect.
enum AuthTour {
    static func run(baseURL: URL, databasePath: String, providerSecret: String, log: TourLog) async throws {
        log.section("Sign-in (OAuth 2.0)")
        let plain = OutpostClient(configuration: .init(baseURL: baseURL))
        defer { Task { try? await plain.shutdown() } }
        for name in ["grace", "linus"] {
            _ = try await plain.send(.post("/users", json: ["username": .string(name), "password": "demo-password-1"]))
        }
        log.step("POST /users signed up grace and linus (passwords stored with Bcrypt)")

        var logger = Logger(label: "demo")
        logger.logLevel = .critical
        let admin = try await SQLiteStorage.open(path: databasePath, logger: logger)
        _ = try await admin.registerClient(
            name: "Outpost CLI (password)", redirectURIs: [], grants: ["password", "refresh_token"],
            scopes: ["records:read", "records:write", "profile"], confidential: false, id: OutpostServer.cliPasswordClientID)
        try await admin.close()
        log.step("the operator opts one client into the legacy password grant: \(OutpostServer.cliPasswordClientID)")
        log.detail("(the built-in outpost-cli uses the browser or device flow; RFC 9700 §2.4 retires passwords in apps)")

        let grace = authenticator(baseURL: baseURL, client: plain, clientID: OutpostServer.cliPasswordClientID)
        let first = try await grace.signIn(username: "grace", password: "demo-password-1")
        log.step("grace signs in with the password grant, asking for records:read records:write profile: no browser needed")
        log.detail(
            "access token \(mask(first.accessToken)), expires \(first.expiresAt.map { "\($0)" } ?? "-"), refresh token \(first.refreshToken.map(mask) ?? "none")"
        )

        let api = OutpostClient(configuration: .init(baseURL: baseURL), middlewares: [AuthMiddleware(authenticator: grace)])
        defer { Task { try? await api.shutdown() } }
        let me = try await api.send(.get("/me"), decoding: JSONValue.self)
        log.step("GET /me through AuthMiddleware → \(me["username"] ?? "?")")

        let refreshed = try await grace.refresh()
        log.step("refresh() rotates both tokens")
        log.detail("access \(mask(first.accessToken)) → \(mask(refreshed.accessToken)); the old refresh token is now spent")

        // The app's widget held the same credential and refreshes it a moment later.
        let widget = authenticator(baseURL: baseURL, client: plain, clientID: OutpostServer.cliPasswordClientID)
        try await widget.setCredential(first)
        let widgets = try await widget.refresh()
        log.step("grace's widget spends the same refresh token a moment later: within the reuse grace window (30 s)")
        log.detail(
            "the server answers the same pair (\(widgets.accessToken == refreshed.accessToken ? "same" : "another") access token) "
                + "instead of revoking the sign-in; after the window, reuse still revokes it")

        try await grace.revoke(refreshed.accessToken, hint: .accessToken)
        let again = try await api.send(.get("/me"), decoding: JSONValue.self)
        let now = try await grace.credential()
        log.step(
            "grace's access token is revoked at the server (RFC 7009); the next request still works (401 → one refresh → retry):")
        log.detail("GET /me → \(again["username"] ?? "?"), access token now \(now.map { mask($0.accessToken) } ?? "-")")

        log.section("Records have owners")
        let note = try await api.send(.post("/records/notes", json: ["text": "grace's note"])).json()
        let path = "/records/notes/\(note["id"]?.stringValue ?? "")"
        log.step("grace creates \(path)")

        let linus = authenticator(baseURL: baseURL, client: plain, clientID: OutpostServer.cliClientID)
        _ = try await linus.signIn(
            provider: "outpost.test",
            data: ["user": "linus", "signature": .string(TestProvider.signature(user: "linus", secret: providerSecret))])
        log.step("linus signs in through a custom provider plugin (outpost.test, signed auth_data)")
        let asLinus = OutpostClient(configuration: .init(baseURL: baseURL), middlewares: [AuthMiddleware(authenticator: linus)])
        defer { Task { try? await asLinus.shutdown() } }
        do {
            _ = try await asLinus.send(.delete(path))
        } catch let error as OutpostError {
            log.step("linus tries DELETE \(path) → HTTP \(error.status ?? 0) [\(error.serverCode ?? "-")]")
            log.detail(error.serverMessage ?? "")
        }
        let deleted = try await api.send(.delete(path))
        log.step("grace deletes it → HTTP \(deleted.status)")

        try await openIDConnect(baseURL: baseURL, client: plain, log: log)
    }

    /// Sign-in with OpenID Connect: discovery, the browser flow asking for `openid` (a scripted
    /// browser plays the person), the ID token verified by the SDK, and UserInfo.
    static func openIDConnect(baseURL: URL, client: OutpostClient, log: TourLog) async throws {
        log.section("OpenID Connect")
        let endpoints = try await Endpoints.discoverOpenID(issuer: baseURL, client: client)
        log.step(
            "GET /.well-known/openid-configuration → JWKS at \(endpoints.jwks?.path ?? "-"), UserInfo at \(endpoints.userInfo?.path ?? "-")"
        )
        let auth = Authenticator(
            configuration: .init(
                registration: ClientRegistration(
                    clientID: OutpostServer.cliClientID, redirectURI: URL(string: "http://127.0.0.1/callback"),
                    scopes: [Authenticator.openIDScope, "profile"]),
                endpoints: endpoints,
                browser: DemoBrowser(client: client, username: "grace", password: "demo-password-1")),
            client: client)
        let credential = try await auth.signInWithBrowser()
        guard let claims = credential.idToken?.claims else {
            log.step("no ID token came back")
            return
        }
        log.step("grace signs in through the browser asking for openid (a scripted browser fills in the form)")
        log.detail("the SDK verified the ID token: RS256 signature from the JWKS, iss, aud, exp, nonce and at_hash")
        log.detail(
            "sub \(claims.subject), iss \(claims.issuer), aud \(claims.audience.joined(separator: " ")), "
                + "signed in \(claims.authTime.map { "\($0)" } ?? "-"), expires \(claims.expiresAt)")
        let info = try await auth.userInfo()
        log.step(
            "GET /userinfo → sub \(info["sub"]?.stringValue ?? "-"), preferred_username \(info["preferred_username"]?.stringValue ?? "-")"
        )
    }

    static func authenticator(baseURL: URL, client: OutpostClient, clientID: String) -> Authenticator {
        Authenticator(
            configuration: .init(
                registration: ClientRegistration(clientID: clientID, scopes: ["records:read", "records:write", "profile"]),
                endpoints: .outpost(base: baseURL)),
            client: client)
    }

    /// Never print a whole token, not even in a demo.
    static func mask(_ token: String) -> String {
        String(token.prefix(8)) + "…"
    }
}
