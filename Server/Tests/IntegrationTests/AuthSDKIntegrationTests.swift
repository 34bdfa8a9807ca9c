import Foundation
import HTTPTypes
import Logging
import Outpost
import OutpostServer
import OutpostServerTesting
import OutpostTestSupport
import Synchronization
import Testing

/// Plays the person at the browser: fetches the sign-in page, posts the credentials and consent,
/// and follows the redirect to the loopback listener (or hands it back, for custom schemes).
struct ScriptedBrowser: BrowserOpening {
    let browser: TestBrowser
    var username = "ada"
    var decision = "allow"
    /// Receives the final redirect instead of following it (custom-scheme redirects).
    var onRedirect: (@Sendable (String) async -> Void)?

    func open(_ url: URL) async throws {
        let page = try await browser.get(url.absoluteString)
        guard page.status == 200 else { throw ScriptError(message: "sign-in page answered \(page.status)") }
        var fields = page.hiddenFields
        fields["username"] = username
        fields["password"] = AuthFixture.password
        fields["decision"] = decision
        let origin = "\(url.scheme ?? "http")://\(url.host ?? "127.0.0.1"):\(url.port ?? 80)"
        let answer = try await browser.postForm(origin + "/oauth/authorize", fields)
        guard let location = answer.header("Location") else { throw ScriptError(message: "no redirect (\(answer.status))") }
        if let onRedirect {
            await onRedirect(location)
        } else {
            _ = try await browser.get(location)
        }
    }

    struct ScriptError: Error { var message: String }
}

/// Counts the requests that reach the token endpoint, under the authenticator.
final class CountingTransport: ClientTransport {
    let inner: any ClientTransport
    let tokenCalls = Counter()

    init(_ inner: any ClientTransport) { self.inner = inner }

    func send(_ request: HTTPRequest, body: Data?, options: TransportOptions) async throws -> (HTTPResponse, Data) {
        if request.path?.hasPrefix("/oauth/token") == true { tokenCalls.increment() }
        return try await inner.send(request, body: body, options: options)
    }

    func shutdown() async throws { try await inner.shutdown() }
}

extension AuthFixture {
    func authenticator(
        store: any CredentialStore = InMemoryCredentialStore(), browser: (any BrowserOpening)? = nil,
        clientID: String? = nil, secret: String? = nil, redirect: String = AuthFixture.redirect,
        transport: (any ClientTransport)? = nil,
        ownsTransport: Bool = true, scopes: [String] = ["records", "profile"],
        logger: Logger = Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() })
    ) -> (Authenticator, OutpostClient) {
        let configuration = OutpostClient.Configuration(baseURL: server.baseURL, logger: logger)
        let client: OutpostClient
        if let transport {
            client =
                ownsTransport
                ? OutpostClient(configuration: configuration, ownedTransport: transport)
                : OutpostClient(configuration: configuration, transport: transport)
        } else {
            client = OutpostClient(configuration: configuration)
        }
        let registration = ClientRegistration(
            clientID: clientID ?? publicClient.id, clientSecret: secret, redirectURI: URL(string: redirect), scopes: scopes)
        let auth = Authenticator(
            configuration: .init(
                registration: registration, endpoints: .outpost(base: server.baseURL), store: store,
                browser: browser ?? ScriptedBrowser(browser: self.browser), logger: logger, sleep: { _ in }),
            client: client)
        return (auth, client)
    }

    func me(_ auth: Authenticator) async throws -> JSONValue {
        let client = OutpostClient(
            configuration: .init(baseURL: server.baseURL), middlewares: [AuthMiddleware(authenticator: auth)])
        do {
            let me = try await client.send(.get("/me"), decoding: JSONValue.self)
            try await client.shutdown()
            return me
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// Expires every access token at the server, as time would.
    func expireAccessTokens() async throws {
        let storage = try await server.openStorage()
        try await storage.expireAccessTokens()
        try await storage.close()
    }
}

@Suite("Every grant through the SDK against the live server", .closesWhatItOpens)
struct AuthSDKIntegrationTests {
    @Test("authorization code + PKCE through a loopback redirect listener (RFC 8252)")
    func loopbackBrowser() async throws {
        try await withAuthFixture { fixture in
            let (auth, client) = fixture.authenticator()
            let credential = try await auth.signInWithBrowser()
            #expect(credential.refreshToken != nil)
            #expect(try await fixture.me(auth)["username"] == "ada")
            try await client.shutdown()
        }
    }

    @Test("custom-scheme redirect delivered through the x-callback-url router; a changed state is refused")
    func customScheme() async throws {
        try await withAuthFixture { fixture in
            let redirect = "outpost-test://x-callback-url/oauth"
            let (auth, client) = fixture.authenticator(redirect: redirect)
            let router = CallbackRouter()
            let delivered = Mutex<URL?>(nil)
            router.register(scheme: "outpost-test", action: "oauth") { callback in
                delivered.withLock { $0 = URL(string: callback.url) }
            }

            let request = try await auth.authorizationRequest()
            let locations = Mutex<String?>(nil)
            try await ScriptedBrowser(browser: fixture.browser, onRedirect: { location in locations.withLock { $0 = location } })
                .open(request.url)
            let location = try #require(locations.withLock { $0 })
            try router.route(location)
            let url = try #require(delivered.withLock { $0 })
            _ = try await auth.completeAuthorization(from: url)
            #expect(try await fixture.me(auth)["username"] == "ada")

            let second = try await auth.authorizationRequest()
            let secondLocations = Mutex<String?>(nil)
            try await ScriptedBrowser(
                browser: fixture.browser, onRedirect: { location in secondLocations.withLock { $0 = location } }
            ).open(second.url)
            let tampered = try #require(secondLocations.withLock { $0 }).replacingOccurrences(of: "state=", with: "state=x")
            let error = try await #require(throws: AuthError.self) {
                _ = try await auth.completeAuthorization(from: URL(string: tampered)!)
            }
            #expect(error.code == .stateMismatch)
            try await client.shutdown()
        }
    }

    @Test("a declined sign-in is accessDenied; an unregistered redirect URI is refused by the server")
    func declinedAndWrongRedirect() async throws {
        try await withAuthFixture { fixture in
            let (auth, client) = fixture.authenticator(browser: ScriptedBrowser(browser: fixture.browser, decision: "deny"))
            let denied = try await #require(throws: AuthError.self) { _ = try await auth.signInWithBrowser() }
            #expect(denied.code == .accessDenied)
            let request = try await auth.authorizationRequest(redirectURI: URL(string: "https://evil.example/cb"))
            let page = try await fixture.browser.get(request.url.absoluteString)
            #expect(page.status == 400)
            #expect(page.header("Location") == nil)
            try await client.shutdown()
        }
    }

    @Test("the implicit grant, for the legacy client allowed it")
    func implicit() async throws {
        try await withAuthFixture { fixture in
            let (auth, client) = fixture.authenticator(
                clientID: fixture.implicitClient.id, redirect: "https://legacy.example/cb", scopes: ["profile"])
            defer { Task { try? await client.shutdown() } }
            let request = try await auth.authorizationRequest(responseType: .token)
            let locations = Mutex<String?>(nil)
            try await ScriptedBrowser(browser: fixture.browser, onRedirect: { location in locations.withLock { $0 = location } })
                .open(request.url)
            let credential = try await auth.completeAuthorization(from: URL(string: try #require(locations.withLock { $0 }))!)
            #expect(credential.refreshToken == nil)
            #expect(try await fixture.me(auth)["username"] == "ada")
        }
    }

    @Test("password, client credentials and a custom provider")
    func directGrants() async throws {
        try await withAuthFixture { fixture in
            let (auth, client) = fixture.authenticator()
            _ = try await auth.signIn(username: "bob", password: AuthFixture.password)
            #expect(try await fixture.me(auth)["username"] == "bob")
            let wrong = try await #require(throws: AuthError.self) {
                _ = try await auth.signIn(username: "bob", password: "not it at all")
            }
            #expect(wrong.code == .invalidGrant)

            let (service, serviceClient) = fixture.authenticator(
                clientID: fixture.confidentialClient.id, secret: fixture.confidentialSecret)
            let machine = try await service.signInWithClientCredentials()
            #expect(machine.refreshToken == nil)
            let who = try await fixture.me(service)
            #expect(who["user"] == .null)
            #expect(who["client_id"] == .string(fixture.confidentialClient.id))

            let (provider, providerClient) = fixture.authenticator()
            _ = try await provider.signIn(
                provider: "outpost.test",
                data: [
                    "user": "dora",
                    "signature": .string(TestProvider.signature(user: "dora", secret: LiveServer.providerSecret)),
                ])
            #expect(try await fixture.me(provider)["username"] == "dora")
            for client in [client, serviceClient, providerClient] { try await client.shutdown() }
        }
    }

    @Test("the device flow, approved on the server's page from the user-code callback")
    func device() async throws {
        try await withAuthFixture { fixture in
            let (auth, client) = fixture.authenticator()
            let shown = Mutex<String?>(nil)
            let browser = fixture.browser
            _ = try await auth.signInWithDeviceCode { code in
                shown.withLock { $0 = code.userCode }
                // The person opens the page on another device and approves.
                guard let page = try? await browser.get((code.verificationURIComplete ?? code.verificationURI).absoluteString)
                else { return }
                var fields = page.hiddenFields
                fields["user_code"] = code.userCode
                fields["username"] = "ada"
                fields["password"] = AuthFixture.password
                fields["decision"] = "continue"
                guard let confirm = try? await browser.postForm(code.verificationURI.absoluteString, fields) else { return }
                var decision = confirm.hiddenFields
                decision["decision"] = "allow"
                _ = try? await browser.postForm(code.verificationURI.absoluteString, decision)
            }
            #expect(shown.withLock { $0 }?.count == 9)
            #expect(try await fixture.me(auth)["username"] == "ada")
            try await client.shutdown()
        }
    }

    @Test("an access token that expired at the server is refreshed without the caller noticing")
    func transparentRefresh() async throws {
        try await withAuthFixture { fixture in
            let counting = CountingTransport(AsyncHTTPClientTransport())
            let (auth, client) = fixture.authenticator(transport: counting)
            _ = try await auth.signIn(username: "ada", password: AuthFixture.password)
            let before = try await auth.credential()
            try await fixture.expireAccessTokens()
            #expect(try await fixture.me(auth)["username"] == "ada")
            let after = try await auth.credential()
            #expect(after?.accessToken != before?.accessToken)
            #expect(counting.tokenCalls.current == 2)
            try await client.shutdown()
        }
    }

    @Test("200 concurrent requests holding an expired token cause exactly one refresh")
    func singleFlight() async throws {
        try await withAuthFixture { fixture in
            let counting = CountingTransport(AsyncHTTPClientTransport())
            let (auth, client) = fixture.authenticator(transport: counting)
            _ = try await auth.signIn(username: "ada", password: AuthFixture.password)
            try await fixture.expireAccessTokens()
            let api = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL), middlewares: [AuthMiddleware(authenticator: auth)])
            let names = try await withThrowingTaskGroup(of: JSONValue?.self) { group in
                for _ in 0..<200 { group.addTask { try await api.send(.get("/me"), decoding: JSONValue.self)["username"] } }
                var names: [JSONValue?] = []
                for try await name in group { names.append(name) }
                return names
            }
            #expect(names.count == 200)
            #expect(names.allSatisfy { $0 == "ada" })
            #expect(counting.tokenCalls.current == 2, "one sign-in and exactly one refresh")
            try await api.shutdown()
            try await client.shutdown()
        }
    }

    @Test("two processes sharing one credentials file spend the refresh token once; the file is owner-only")
    func sharedFileStore() async throws {
        try await withAuthFixture { fixture in
            let file = fixture.server.folder.appendingPathComponent("creds/credentials.json")
            let counting = CountingTransport(AsyncHTTPClientTransport())
            let (first, firstClient) = fixture.authenticator(store: FileCredentialStore(fileURL: file), transport: counting)
            _ = try await first.signIn(username: "ada", password: AuthFixture.password)
            let permissions = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(permissions == 0o600)
            let (second, secondClient) = fixture.authenticator(
                store: FileCredentialStore(fileURL: file), transport: counting, ownsTransport: false)
            try await fixture.expireAccessTokens()
            async let a = fixture.me(first)
            async let b = fixture.me(second)
            let (x, y) = try await (a, b)
            #expect(x["username"] == "ada" && y["username"] == "ada")
            #expect(counting.tokenCalls.current == 2, "one sign-in, one refresh shared through the file")
            try await firstClient.shutdown()
            try await secondClient.shutdown()
        }
    }

    @Test("sign-out clears the local credential and revokes it at the server")
    func signOut() async throws {
        try await withAuthFixture { fixture in
            let store = InMemoryCredentialStore()
            let (auth, client) = fixture.authenticator(store: store)
            let credential = try await auth.signIn(username: "ada", password: AuthFixture.password)
            try await auth.signOut(revoke: true)
            #expect(await store.load(account: fixture.publicClient.id) == nil)
            #expect(
                try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(credential.accessToken)").status
                    == 401)
            try await client.shutdown()
        }
    }

    @Test("no token, password or code in the client's or the server's logs at trace level")
    func logsClean() async throws {
        let recorder = LogRecorder()
        var secrets = [AuthFixture.password]
        try await withAuthFixture(configure: { $0.logger = recorder.logger() }) { fixture in
            let (auth, client) = fixture.authenticator(logger: recorder.logger())
            let credential = try await auth.signInWithBrowser()
            secrets += [credential.accessToken, credential.refreshToken].compactMap { $0 }
            let refreshed = try await auth.refresh()
            secrets += [refreshed.accessToken, refreshed.refreshToken].compactMap { $0 }
            try await client.shutdown()
        }
        let lines = recorder.all
        #expect(lines.contains { $0.contains("/oauth/authorize") })
        for secret in secrets { #expect(!lines.contains { $0.contains(secret) }) }
        #expect(!lines.contains { $0.contains("opc_") }, "an authorization code reached a log")
    }
}

@Suite("Credential scope against the live server", .closesWhatItOpens)
struct CredentialScopeIntegrationTests {
    @Test("the token goes to the base URL's origin only: another origin is refused, or sent unsigned")
    func scoped() async throws {
        try await withAuthFixture { fixture in
            let (auth, client) = fixture.authenticator()
            try await auth.signIn(username: "ada", password: AuthFixture.password)
            let port = try #require(fixture.server.baseURL.port)
            // Same server, another origin: `localhost` is not `127.0.0.1`.
            let elsewhere = "http://localhost:\(port)/me"
            let strict = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL), transport: client.transport,
                middlewares: [AuthMiddleware(authenticator: auth)])
            #expect(try await strict.send(.get("/me")).status == 200)
            let refused = await #expect(throws: OutpostError.self) { try await strict.send(.get(elsewhere)) }
            #expect(refused?.code == .untrustedDestination)

            let lenient = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL), transport: client.transport,
                middlewares: [AuthMiddleware(authenticator: auth, crossOriginPolicy: .sendUnsigned)])
            let unsigned = await #expect(throws: OutpostError.self) { try await lenient.send(.get(elsewhere)) }
            #expect(unsigned?.status == 401, "sent, without the token")

            let trusting = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL), transport: client.transport,
                middlewares: [AuthMiddleware(authenticator: auth, trustedOrigins: [URL(string: "http://localhost:\(port)")!])])
            #expect(try await trusting.send(.get(elsewhere)).status == 200)
            try await client.shutdown()
        }
    }
}
