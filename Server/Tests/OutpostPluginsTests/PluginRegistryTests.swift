import Foundation
import OutpostCallbacks
@_spi(OutpostInternal) import OutpostCore
import OutpostPlugins
import OutpostTesting
import Synchronization
import Testing

/// `docs/plugins-manifest.example.json`, found from this file's place in the repository.
let exampleManifestURL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("docs/plugins-manifest.example.json")

/// A registry with every built-in type, over fakes.
func testRegistry(
    session: FakeSession = FakeSession(), transport: ScriptedTransport = meEndpoint([:]), router: CallbackRouter? = nil
)
    -> PluginRegistry
{
    var registry = PluginRegistry()
    let center = NotificationRecorder().center
    registry.registerOAuthLoginProvider(notificationCenter: center) { _ in session }
    registry.registerEntitlementCompliance(client: transport.client())
    registry.registerCallbackStartupHook(router: router ?? CallbackRouter(opener: RecordingURLOpener()))
    return registry
}

@Suite("The plugin registry")
struct PluginRegistryTests {
    @Test("the example manifest in docs/ builds: providers, checkers, screens, startup hooks")
    func exampleManifest() async throws {
        let manifest = try PluginManifest(contentsOf: exampleManifestURL)
        let session = FakeSession()
        let transport = meEndpoint(["access-1": ["premium"]])
        let router = CallbackRouter(opener: RecordingURLOpener())
        let opened = Mutex(0)
        router.register(scheme: "outpost-demo", action: "open") { _ in opened.withLock { $0 += 1 } }
        let registry = testRegistry(session: session, transport: transport, router: router)
        let plugins = try registry.build(manifest)

        #expect(plugins.order == ["oauth", "entitlements", "premium-gate", "account-gate", "callbacks"])
        #expect(plugins.loginProviders.keys.sorted() == ["oauth"])
        #expect(plugins.complianceCheckers.keys.sorted() == ["entitlements"])
        #expect(plugins.screenHooks.keys.sorted() == ["account-gate", "premium-gate"])
        #expect(plugins.screens.keys.sorted() == ["account", "premium-video"])
        #expect(plugins.startupHooks.map(\.name) == ["oauth", "callbacks"])
        #expect(plugins.chain(for: "account").timeout == .seconds(5))
        #expect(plugins.chain(for: "premium-video").timeout == .seconds(10))
        let oauth = try #require(plugins.plugin("oauth", as: OAuthLoginProvider.self))
        #expect(!oauth.allowsSettingUserToken)
        #expect(manifest.plugins[0].configuration == ["interactive": true, "allows_setting_token": false])

        // Startup: nothing stored, so the user stays signed out; a URL is routed.
        let runner = plugins.startupRunner()
        #expect(try await runner.run(.launch) == ["oauth"])
        #expect(
            try await runner.run(.continueUserActivity, context: ["url": "outpost-demo://x-callback-url/open"])
                == ["oauth", "callbacks"].filter { $0 == "callbacks" })
        #expect(opened.withLock { $0 } == 1)

        // The premium screen: denied while signed out without a presenter, granted after sign-in.
        let denied = await ScreenHookChainTests.failure(of: plugins.chain(for: "premium-video"))
        #expect(denied?.code == .noLoginPresenter)
        let presenter = ProviderLoginPresenter(providers: Array(plugins.loginProviders.values))
        let granted = try await plugins.chain(for: "premium-video", presenter: presenter).run()
        #expect(granted.data == ["compliant": true])
        #expect(transport.requests.last?.request.headerFields[.authorization] == "Bearer access-1")

        // A screen the manifest does not list is allowed.
        let about = try await plugins.chain(for: "about").run()
        #expect(about.passed.isEmpty && about.failures.isEmpty)
    }

    @Test("the manifest round-trips through JSON")
    func roundTrip() throws {
        let manifest = try PluginManifest(contentsOf: exampleManifestURL)
        #expect(try PluginManifest(json: manifest.json) == manifest)
        #expect(try PluginManifest(data: manifest.json.jsonData()) == manifest)
    }

    @Test("an unknown plugin type names the entry and the registered types")
    func unknownType() throws {
        let manifest = PluginManifest(plugins: [.init(identifier: "fb", type: "com.facebook.login")])
        let error = #expect(throws: PluginError.self) { try testRegistry().build(manifest) }
        #expect(error?.code == .unknownPluginType)
        #expect(error?.location == "plugins[0].type")
        #expect(error?.plugin == "fb")
        #expect(error?.description.contains("com.facebook.login") == true)
        #expect(error?.suggestion?.contains(OAuthLoginProvider.pluginType) == true)
        #expect(throws: PluginError.self) {
            try PluginRegistry.empty.build(PluginManifest(plugins: [.init(identifier: "g", type: AccessScreenHook.pluginType)]))
        }
    }

    @Test("an unknown plugin in a screen, in startup, or in a configuration is named with its place")
    func unknownPlugin() throws {
        let screens = PluginManifest(
            plugins: [.init(identifier: "oauth", type: OAuthLoginProvider.pluginType)],
            screens: [.init(name: "premium", hooks: ["paywall"])])
        let inScreen = #expect(throws: PluginError.self) { try testRegistry().build(screens) }
        #expect(inScreen?.code == .unknownPlugin)
        #expect(inScreen?.location == "screens[0].hooks[0]")
        #expect(inScreen?.suggestion?.contains("oauth") == true)

        let startup = PluginManifest(startup: ["ghost"])
        let inStartup = #expect(throws: PluginError.self) { try testRegistry().build(startup) }
        #expect(inStartup?.location == "startup[0]")

        let forward = PluginManifest(plugins: [
            .init(identifier: "gate", type: AccessScreenHook.pluginType, configuration: ["login_provider": "oauth"]),
            .init(identifier: "oauth", type: OAuthLoginProvider.pluginType),
        ])
        let inConfiguration = #expect(throws: PluginError.self) { try testRegistry().build(forward) }
        #expect(inConfiguration?.code == .unknownPlugin)
        #expect(inConfiguration?.location == "plugins[0].configuration.login_provider")
        #expect(inConfiguration?.suggestion?.contains("earlier") == true)
    }

    @Test("a plugin used as the wrong kind is refused")
    func wrongKind() throws {
        let asHook = PluginManifest(
            plugins: [.init(identifier: "oauth", type: OAuthLoginProvider.pluginType)],
            screens: [.init(name: "s", hooks: ["oauth"])])
        let error = #expect(throws: PluginError.self) { try testRegistry().build(asHook) }
        #expect(error?.code == .wrongPluginKind)
        #expect(error?.message.contains("login provider and startup hook") == true)
        #expect(error?.message.contains("a screen hook") == true)

        let asProvider = PluginManifest(plugins: [
            .init(identifier: "callbacks", type: CallbackStartupHook.pluginType),
            .init(identifier: "gate", type: AccessScreenHook.pluginType, configuration: ["login_provider": "callbacks"]),
        ])
        let provider = #expect(throws: PluginError.self) { try testRegistry().build(asProvider) }
        #expect(provider?.code == .wrongPluginKind)
        #expect(provider?.location == "plugins[1].configuration.login_provider")

        var registry = testRegistry()
        registry.register(type: "odd") { _ in 42 }
        let odd = #expect(throws: PluginError.self) {
            try registry.build(PluginManifest(plugins: [.init(identifier: "n", type: "odd")]))
        }
        #expect(odd?.code == .wrongPluginKind)
    }

    @Test("bad configuration names the entry and the key")
    func badConfiguration() throws {
        let manifest = PluginManifest(plugins: [
            .init(identifier: "oauth", type: OAuthLoginProvider.pluginType),
            .init(
                identifier: "entitlements", type: EntitlementComplianceChecker.pluginType,
                configuration: ["login_provider": "oauth", "cache_seconds": "soon"]),
        ])
        let error = #expect(throws: PluginError.self) { try testRegistry().build(manifest) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.location == "plugins[1].configuration.cache_seconds")
        #expect(error?.plugin == "entitlements")
        #expect(error?.description.contains("number of seconds") == true)

        let missing = PluginManifest(plugins: [.init(identifier: "gate", type: AccessScreenHook.pluginType)])
        let missingError = #expect(throws: PluginError.self) { try testRegistry().build(missing) }
        #expect(missingError?.location == "plugins[0].configuration.login_provider")

        let stage = PluginManifest(plugins: [
            .init(identifier: "oauth", type: OAuthLoginProvider.pluginType),
            .init(
                identifier: "gate", type: AccessScreenHook.pluginType,
                configuration: ["login_provider": "oauth", "stages": ["later"]]),
        ])
        let stageError = #expect(throws: PluginError.self) { try testRegistry().build(stage) }
        #expect(stageError?.location == "plugins[1].configuration.stages")

        var registry = testRegistry()
        registry.register(type: "throws") { _ in throw Boom() }
        let foreign = #expect(throws: PluginError.self) {
            try registry.build(PluginManifest(plugins: [.init(identifier: "t", type: "throws")]))
        }
        #expect(foreign?.code == .invalidConfiguration)
        #expect(foreign?.underlying is Boom)
        #expect(foreign?.location == "plugins[0]")
    }

    @Test(
        "malformed manifests say where and what to fix",
        arguments: [
            ("{\"plugins\": [", "(none)", "JSON validator"),
            ("[1, 2]", "(top level)", "{...}"),
            ("{\"plugins\": {}}", "plugins", "[...]"),
            ("{\"plugins\": [{\"id\": \"a\"}]}", "plugins[0].type", "non-empty string"),
            ("{\"plugins\": [{\"id\": \"\", \"type\": \"t\"}]}", "plugins[0].id", "\"...\""),
            ("{\"plugins\": [{\"id\": \"a\", \"type\": \"t\", \"configuraton\": {}}]}", "plugins[0]", "configuration"),
            ("{\"plugins\": [{\"id\": \"a\", \"type\": \"t\", \"configuration\": 3}]}", "plugins[0].configuration", "{\"key\""),
            ("{\"screens\": [{\"name\": \"s\", \"hooks\": [1]}]}", "screens[0].hooks[0]", "\"...\""),
            (
                "{\"screens\": [{\"name\": \"s\", \"hooks\": [], \"timeout_seconds\": -1}]}", "screens[0].timeout_seconds",
                "number"
            ),
            ("{\"screens\": [{\"name\": \"s\"}, {\"name\": \"s\"}]}", "screens[1].name", "Merge"),
            ("{\"version\": 2}", "version", "\"version\": 1"),
            ("{\"startup\": \"oauth\"}", "startup", "[...]"),
        ])
    func malformed(text: String, location: String, fix: String) throws {
        let error = #expect(throws: PluginError.self) { try testRegistry().build(manifestData: Data(text.utf8)) }
        #expect(error?.code == .malformedManifest)
        #expect((error?.location ?? "(none)") == location)
        #expect(error?.suggestion?.contains(fix) == true, "\(error?.description ?? "")")
    }

    @Test("duplicate identifiers are refused")
    func duplicates() throws {
        let text = #"{"plugins": [{"id": "a", "type": "t"}, {"id": "a", "type": "u"}]}"#
        let error = #expect(throws: PluginError.self) { try PluginManifest(data: Data(text.utf8)) }
        #expect(error?.code == .duplicateIdentifier)
        #expect(error?.location == "plugins[1].id")
        let built = #expect(throws: PluginError.self) {
            try testRegistry().build(
                PluginManifest(plugins: [
                    .init(identifier: "o", type: OAuthLoginProvider.pluginType),
                    .init(identifier: "o", type: OAuthLoginProvider.pluginType),
                ]))
        }
        #expect(built?.code == .duplicateIdentifier)
    }

    @Test("a custom type registered by the app is built with its configuration, and can be replaced")
    func customType() async throws {
        struct Banner: ScreenHook {
            var name: String
            var text: String
            var isFlowBlocker: Bool { false }
            func evaluate(_ context: ScreenHookContext) async throws -> ScreenHookDecision {
                .proceed(adding: ["banner": .string(text)])
            }
        }
        var registry = testRegistry()
        registry.register(type: "com.example.banner") { context in
            Banner(name: context.identifier, text: try context.configuration.requiredString("text"))
        }
        #expect(registry.types.contains("com.example.banner"))
        let text =
            #"{"plugins": [{"id": "hello", "type": "com.example.banner", "configuration": {"text": "Hi"}}], "screens": [{"name": "home", "hooks": ["hello"]}]}"#
        let plugins = try registry.build(manifestData: Data(text.utf8))
        #expect(try await plugins.chain(for: "home").run().data == ["banner": "Hi"])
        registry.register(type: "com.example.banner") { context in Banner(name: context.identifier, text: "replaced") }
        #expect(try await registry.build(manifestData: Data(text.utf8)).chain(for: "home").run().data == ["banner": "replaced"])
        registry.unregister(type: "com.example.banner")
        #expect(!registry.types.contains("com.example.banner"))
    }
}
