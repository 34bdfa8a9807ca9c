import Foundation
import Logging
import Outpost
import OutpostServer

/// Sign-in through an upstream OpenID Connect provider, as an app does with Sign in with Apple or
/// Google: a second Outpost server plays the provider (it is an OpenID provider itself). A person
/// signs in there through the browser asking for `openid`; the app sends the ID token it got to the
/// demo's server (RFC 8693 token exchange), which checks it against the provider's published keys
/// and answers its own tokens.
enum FederationTour {
    static func run(baseURL: URL, databasePath: String, folder: URL, log: TourLog) async throws {
        log.section("Sign-in through an upstream provider (OpenID Connect)")
        var logger = Logger(label: "demo.upstream")
        logger.logLevel = .critical
        let upstreamConfiguration = ServerConfiguration(
            host: "127.0.0.1", port: 0, databasePath: folder.appendingPathComponent("upstream.sqlite").path, logger: logger,
            auth: AuthConfiguration(passwordCost: 8))
        let upstream = try await OutpostServer(configuration: upstreamConfiguration, plugins: []).start()
        let upstreamClient = OutpostClient(configuration: .init(baseURL: upstream.baseURL))
        let plain = OutpostClient(configuration: .init(baseURL: baseURL))
        do {
            try await tour(baseURL: baseURL, upstream: upstream.baseURL, upstreamClient, plain, databasePath, logger, log)
        } catch {
            try? await upstreamClient.shutdown()
            try? await plain.shutdown()
            await upstream.stop()
            throw error
        }
        try await upstreamClient.shutdown()
        try await plain.shutdown()
        await upstream.stop()
    }

    private static func tour(
        baseURL: URL, upstream: URL, _ upstreamClient: OutpostClient, _ plain: OutpostClient, _ databasePath: String,
        _ logger: Logger, _ log: TourLog
    ) async throws {
        _ = try await upstreamClient.send(.post("/users", json: ["username": "hedy", "password": "demo-password-1"]))
        let discovery = try await upstreamClient.send(.get("/.well-known/openid-configuration"), decoding: JSONValue.self)
        let issuer = discovery["issuer"]?.stringValue ?? upstream.absoluteString
        log.step("an upstream OpenID provider runs at \(upstream) (another Outpost server) with the user hedy")

        // The operator registers the provider (`outpost providers add upstream --issuer ... --client-id ...`)
        // and lets one client exchange ID tokens.
        let storage = try await SQLiteStorage.open(path: databasePath, logger: logger)
        let app: OAuthClient
        do {
            _ = try await storage.addUpstreamProvider(
                UpstreamProvider(
                    name: "upstream", issuer: issuer, kind: .openID, clientIDs: [OutpostServer.cliClientID],
                    createdAt: Int64(Date().timeIntervalSince1970 * 1000)))
            app = try await storage.registerClient(
                name: "Demo native app", redirectURIs: [], grants: ["token_exchange", "refresh_token"],
                scopes: ["records:read", "records:write", "profile"], confidential: false
            ).client
            try await storage.close()
        } catch {
            try? await storage.close()
            throw error
        }
        log.step(
            "the operator registers it: outpost providers add upstream --issuer \(issuer) --client-id \(OutpostServer.cliClientID)"
        )

        // The person signs in at the provider; the provider's SDK would do this part in a real app.
        let atProvider = Authenticator(
            configuration: .init(
                registration: ClientRegistration(
                    clientID: OutpostServer.cliClientID, redirectURI: URL(string: "http://127.0.0.1/callback"),
                    scopes: [Authenticator.openIDScope, "profile"]),
                endpoints: try await Endpoints.discoverOpenID(issuer: upstream, client: upstreamClient),
                store: InMemoryCredentialStore(),
                browser: DemoBrowser(client: upstreamClient, username: "hedy", password: "demo-password-1")),
            client: upstreamClient)
        guard let idToken = try await atProvider.signInWithBrowser().idToken, let nonce = idToken.claims.nonce else {
            log.step("the provider gave no ID token with a nonce")
            return
        }
        log.step("hedy signs in at the provider in the browser; the app holds its ID token (sub \(idToken.claims.subject))")

        let auth = Authenticator(
            configuration: .init(
                registration: ClientRegistration(clientID: app.id, scopes: ["records:read", "records:write", "profile"]),
                endpoints: .outpost(base: baseURL), store: InMemoryCredentialStore()),
            client: plain)
        try await auth.signIn(idToken: idToken.rawValue, provider: "upstream", nonce: SignInNonce(value: nonce))
        let api = OutpostClient(configuration: .init(baseURL: baseURL), middlewares: [AuthMiddleware(authenticator: auth)])
        defer { Task { try? await api.shutdown() } }
        let me = try await api.send(.get("/me"), decoding: JSONValue.self)
        log.step(
            "signIn(idToken:provider:nonce:) → the server checked signature, iss, aud, exp and nonce; GET /me → \(me["username"]?.stringValue ?? "?")"
        )
        do {
            try await auth.signIn(idToken: idToken.rawValue, provider: "upstream", nonce: SignInNonce(value: nonce))
            log.detail("the same ID token was accepted twice")
        } catch let error as AuthError {
            log.detail("the same ID token again → \(error.oauthError ?? "-"): \(error.serverMessage ?? error.message)")
        }
        let identities = try await auth.linkedIdentities()
        log.step(
            "linkedIdentities() → \(identities.map { "\($0.provider) \($0.subject)" }.joined(separator: ", "))")
        if let only = identities.first {
            do {
                try await auth.unlinkIdentity(only)
            } catch let error as AuthError {
                log.detail("unlinkIdentity(_:) of the only way in → \(error.status ?? 0) \(error.oauthError ?? "-")")
            }
        }
    }
}
