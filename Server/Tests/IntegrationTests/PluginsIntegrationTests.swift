import Foundation
import Outpost
import OutpostServer
import OutpostTestSupport
import Synchronization
import Testing

/// An `OAuthSession` that signs in with the password grant against the live server.
private final class PasswordGrantSession: OAuthSession {
    let browser: TestBrowser
    let tokenURL: String
    let clientID: String
    let username: String
    private let token = Mutex<String?>(nil)

    init(fixture: AuthFixture, username: String) {
        self.browser = fixture.browser
        self.tokenURL = fixture.base + "/oauth/token"
        self.clientID = fixture.publicClient.id
        self.username = username
    }

    func signIn(interactive: Bool) async throws -> Bool {
        let page = try await browser.postForm(
            tokenURL,
            ["grant_type": "password", "username": username, "password": AuthFixture.password, "client_id": clientID])
        let access = try #require(page.json["access_token"] as? String, "\(page.body)")
        token.withLock { $0 = access }
        return true
    }

    func signOut() async throws { token.withLock { $0 = nil } }
    var accessToken: String? { get async { token.withLock { $0 } } }
    func setAccessToken(_ token: String?) async throws { self.token.withLock { $0 = token } }
    func restore() async -> Bool { token.withLock { $0 != nil } }
}

/// Sets a user's entitlements in the live server's database.
private func setEntitlements(_ entitlements: [String], of username: String, on fixture: AuthFixture) async throws {
    let storage = try await fixture.server.openStorage()
    do {
        let user = try #require(try await storage.user(username: username))
        try await storage.setEntitlements(entitlements, userID: user.id)
        try await storage.close()
    } catch {
        try? await storage.close()
        throw error
    }
}

@Suite("Plugins against the live server", .closesWhatItOpens)
struct PluginsIntegrationTests {
    @Test("the entitlement checker reads /me: async asks, sync answers from the cache, free needs nobody")
    func entitlementChecker() async throws {
        try await withAuthFixture { fixture in
            try await setEntitlements(["premium"], of: "ada", on: fixture)
            let ada = try #require(try await fixture.passwordTokens("ada")["access_token"] as? String)
            let bob = try #require(try await fixture.passwordTokens("bob")["access_token"] as? String)
            try await IdempotencyTests.withClient(fixture.server.baseURL) { client in
                let adaChecker = EntitlementComplianceChecker(client: client, token: { ada })
                #expect(!adaChecker.isCompliant(policies: ["entitlement": "premium"]), "sync form: nothing cached yet")
                #expect(try await adaChecker.isCompliant(policies: ["entitlement": "premium"]))
                #expect(adaChecker.isCompliant(policies: ["entitlement": "premium"]), "sync form: from the cache")
                #expect(try await !adaChecker.isCompliant(policies: ["entitlement": "gold"]))
                #expect(try await adaChecker.entitlements() == ["premium"])

                let bobChecker = EntitlementComplianceChecker(client: client, token: { bob })
                #expect(try await !bobChecker.isCompliant(policies: ["entitlement": "premium"]))
                #expect(try await bobChecker.isCompliant(policies: ["item_id": "42"]), "signed in is enough")
                #expect(try await bobChecker.isCompliant(policies: ["free": true]))

                let stranger = EntitlementComplianceChecker(client: client, token: { "opa_not-a-real-token" })
                #expect(try await !stranger.isCompliant(policies: ["entitlement": "premium"]), "401 from the server")
                #expect(try await stranger.entitlements() == nil)
                let nobody = EntitlementComplianceChecker(client: client, token: { nil })
                #expect(try await !nobody.isCompliant(policies: [:]))
                #expect(try await nobody.isCompliant(policies: ["playable_items": [["free": true]]]))

                // The cache hides a change until it goes stale or is refreshed.
                try await setEntitlements([], of: "ada", on: fixture)
                #expect(try await adaChecker.isCompliant(policies: ["entitlement": "premium"]), "cached")
                #expect(try await adaChecker.refresh() == [])
                #expect(try await !adaChecker.isCompliant(policies: ["entitlement": "premium"]))
                let uncached = EntitlementComplianceChecker(
                    client: client, configuration: .init(cacheLifetime: .zero), token: { ada })
                try await setEntitlements(["premium", "sports"], of: "ada", on: fixture)
                #expect(try await uncached.isCompliant(policies: ["entitlements": ["sports"]]))
            }
        }
    }

    @Test("a server that is gone is an error, not a no")
    func serverGone() async throws {
        let nobody = try ClosedPort()
        defer { nobody.release() }
        try await IdempotencyTests.withClient(nobody.baseURL, retry: .none) { client in
            let checker = EntitlementComplianceChecker(client: client, token: { "t" })
            let error = await #expect(throws: PluginError.self) {
                try await checker.isCompliant(policies: ["entitlement": "premium"]) as Bool
            }
            #expect(error?.code == .complianceCheckFailed)
            #expect(checker.isCompliant(policies: ["free": true]))
        }
    }

    @Test("a premium screen: denied signed out, sign-in through the OAuth provider, granted by the server's entitlements")
    func premiumScreen() async throws {
        try await withAuthFixture { fixture in
            try await setEntitlements(["premium"], of: "ada", on: fixture)
            try await IdempotencyTests.withClient(fixture.server.baseURL) { client in
                var registry = PluginRegistry()
                registry.registerOAuthLoginProvider(notificationCenter: NotificationCenter()) { _ in
                    PasswordGrantSession(fixture: fixture, username: "ada")
                }
                registry.registerEntitlementCompliance(client: client)
                let manifest: JSONValue = [
                    "plugins": [
                        ["id": "oauth", "type": "outpost.login.oauth"],
                        [
                            "id": "entitlements", "type": "outpost.compliance.entitlements",
                            "configuration": ["login_provider": "oauth"],
                        ],
                        [
                            "id": "premium-gate", "type": "outpost.hook.access",
                            "configuration": [
                                "login_provider": "oauth", "compliance": "entitlements", "policies": ["entitlement": "premium"],
                            ],
                        ],
                    ],
                    "screens": [["name": "premium-video", "hooks": ["premium-gate"]]],
                    "startup": ["oauth"],
                ]
                let plugins = try registry.build(PluginManifest(json: manifest))
                let oauth = try #require(plugins.loginProviders["oauth"])
                try await plugins.startupRunner().run(.launch)
                #expect(!oauth.isAuthenticated, "nothing stored")

                await #expect { try await plugins.chain(for: "premium-video").run() } throws: {
                    ($0 as? PluginError)?.code == .noLoginPresenter
                }

                let presenter = ProviderLoginPresenter(providers: [oauth])
                let granted = try await plugins.chain(for: "premium-video", presenter: presenter).run()
                #expect(granted.data == ["compliant": true])
                #expect(oauth.isAuthenticated)
                let checker = try #require(plugins.complianceCheckers["entitlements"])
                #expect(checker.isCompliant(policies: ["entitlement": "premium"]), "sync form answers from what the hook fetched")

                try await setEntitlements([], of: "ada", on: fixture)
                (checker as? EntitlementComplianceChecker)?.invalidate()
                await #expect { try await plugins.chain(for: "premium-video", presenter: presenter).run() } throws: {
                    ($0 as? PluginError)?.code == .denied
                }
            }
        }
    }

    @Test("the OAuth login provider over OutpostAuth's authenticator: login, token, silent restore, logout")
    func authenticatorSession() async throws {
        try await withAuthFixture { fixture in
            let store = InMemoryCredentialStore()
            let (auth, client) = fixture.authenticator(store: store)
            let session = AuthenticatorSession(
                authenticator: auth, flow: .password(username: "ada", password: AuthFixture.password))
            let provider = try OAuthLoginProvider(
                identifier: "oauth", session: session, configuration: [:], notificationCenter: NotificationCenter())
            #expect(!(await session.restore()))
            try await provider.login(parameters: [:])
            #expect(provider.isAuthenticated)
            let token = try #require(await session.accessToken)
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(token)").status == 200)

            // A new provider over the same store signs in silently.
            let (secondAuth, secondClient) = fixture.authenticator(store: store)
            let again = AuthenticatorSession(authenticator: secondAuth, flow: .browser)
            #expect(await again.restore())
            try await secondClient.shutdown()

            try await provider.logout()
            #expect(!provider.isAuthenticated)
            #expect(try await fixture.browser.get(fixture.base + "/me", authorization: "Bearer \(token)").status == 401)
            try await client.shutdown()
        }
    }

    @Test("setUserToken through AuthenticatorSession: the set token is sent, a cleared one is not")
    func setUserToken() async throws {
        try await withAuthFixture { fixture in
            let (auth, client) = fixture.authenticator()
            let session = AuthenticatorSession(
                authenticator: auth, flow: .password(username: "ada", password: AuthFixture.password))
            let provider = try OAuthLoginProvider(
                identifier: "oauth", session: session, configuration: [:], notificationCenter: NotificationCenter())
            let api = OutpostClient(
                configuration: .init(baseURL: fixture.server.baseURL), transport: client.transport,
                middlewares: [AuthMiddleware(authenticator: auth)])
            try await provider.login(parameters: [:])
            let signedIn = try #require(await session.accessToken)
            #expect(try await api.send(.get("/me")).status == 200)

            // A token from elsewhere (here: a second sign-in of the same user) replaces the credential.
            let (other, otherClient) = fixture.authenticator()
            let given = try await other.signIn(username: "ada", password: AuthFixture.password).accessToken
            try await provider.setUserToken(given)
            #expect(given != signedIn)
            #expect(await session.accessToken == given)
            #expect(try await api.send(.get("/me")).status == 200)

            try await provider.setUserToken(nil)
            #expect(await session.accessToken == nil)
            let error = await #expect(throws: OutpostError.self) { try await api.send(.get("/me")) }
            #expect(error?.code == .unauthorized)
            try await otherClient.shutdown()
            try await client.shutdown()
        }
    }
}
