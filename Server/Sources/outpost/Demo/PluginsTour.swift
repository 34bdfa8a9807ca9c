import Foundation
import Logging
import Outpost
import OutpostServer

/// A screen hook denies a premium screen while signed out; sign-in through the OAuth login provider
/// plugin; the server's entitlements grant the screen afterwards.
enum PluginsTour {
    static func run(baseURL: URL, databasePath: String, log: TourLog) async throws {
        log.section("Plugins: login provider, compliance, screen hooks")
        var logger = Logger(label: "demo")
        logger.logLevel = .critical
        let admin = try await SQLiteStorage.open(path: databasePath, logger: logger)
        if let grace = try await admin.user(username: "grace") {
            try await admin.setEntitlements(["premium"], userID: grace.id)
        }
        try await admin.close()
        log.step("The operator gives grace the \"premium\" entitlement (outpost users entitle grace premium)")

        let client = OutpostClient(configuration: .init(baseURL: baseURL))
        defer { Task { try? await client.shutdown() } }
        let auth = AuthTour.authenticator(baseURL: baseURL, client: client, clientID: OutpostServer.cliPasswordClientID)
        var registry = PluginRegistry()
        registry.registerOAuthLoginProvider(notificationCenter: NotificationCenter()) { _ in
            AuthenticatorSession(authenticator: auth, flow: .password(username: "grace", password: "demo-password-1"))
        }
        registry.registerEntitlementCompliance(client: client)
        let manifest = try PluginManifest(json: [
            "plugins": [
                ["id": "oauth", "type": "outpost.login.oauth"],
                ["id": "entitlements", "type": "outpost.compliance.entitlements", "configuration": ["login_provider": "oauth"]],
                [
                    "id": "premium-gate", "type": "outpost.hook.access",
                    "configuration": [
                        "login_provider": "oauth", "compliance": "entitlements", "policies": ["entitlement": "premium"],
                    ],
                ],
            ],
            "screens": [["name": "premium-video", "hooks": ["premium-gate"]]],
            "startup": ["oauth"],
        ])
        let plugins = try registry.build(manifest)
        log.step("A manifest builds the OAuth login provider, the entitlement checker and the premium-video screen's hook")
        try await plugins.startupRunner().run(.launch)
        let provider = plugins.loginProviders["oauth"]
        log.detail(
            "launch hooks ran; silent sign-in from a stored credential: \(provider?.isAuthenticated == true ? "signed in" : "nothing stored")"
        )

        do {
            _ = try await plugins.chain(for: "premium-video").run()
            log.step("Open premium-video while signed out, with no way to sign in: allowed")
        } catch {
            log.step("Open premium-video while signed out, with no way to sign in: denied")
            log.detail("\(error.code): \(error.message)")
        }

        guard let provider else { return }
        let presenter = ProviderLoginPresenter(providers: [provider])
        let granted = try await plugins.chain(for: "premium-video", presenter: presenter).run()
        log.step("Open it again with a login presenter: the hook requires sign-in, the OAuth provider signs grace in,")
        log.detail("the server says she has premium → granted, with \(JSONValue.object(granted.data))")
    }
}
