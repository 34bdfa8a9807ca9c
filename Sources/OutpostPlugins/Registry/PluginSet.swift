/// The plugins a ``PluginRegistry`` built from a ``PluginManifest``, by kind, with the screens'
/// hook chains and the startup hooks.
public struct PluginSet: Sendable {
    /// Every plugin, by identifier.
    public let plugins: [String: any Sendable]
    /// The identifiers, in manifest order.
    public let order: [String]
    /// The screens' hook chains, by screen name.
    public let screens: [String: ScreenHookChain]
    /// The startup hooks, in the order they run.
    public let startupHooks: [any StartupHook]
    /// The time limit of each hook.
    public let hookTimeout: Duration
    /// The presenter the chains were built with.
    public let presenter: (any LoginPresenting)?

    init(
        plugins: [String: any Sendable], order: [String], screens: [String: ScreenHookChain], startupHooks: [any StartupHook],
        hookTimeout: Duration, presenter: (any LoginPresenting)?
    ) {
        self.plugins = plugins
        self.order = order
        self.screens = screens
        self.startupHooks = startupHooks
        self.hookTimeout = hookTimeout
        self.presenter = presenter
    }

    /// The plugin `identifier` as a `Kind`, e.g. `set.plugin("oauth", as: (any LoginProvider).self)`.
    public func plugin<Kind>(_ identifier: String, as kind: Kind.Type) -> Kind? {
        plugins[identifier] as? Kind
    }

    /// The login providers, by identifier.
    public var loginProviders: [String: any LoginProvider] { plugins.compactMapValues { $0 as? any LoginProvider } }
    /// The compliance checkers, by identifier.
    public var complianceCheckers: [String: any UserCompliance] { plugins.compactMapValues { $0 as? any UserCompliance } }
    /// The login screen handlers, by identifier.
    public var loginScreenHandlers: [String: any LoginScreenHandling] {
        plugins.compactMapValues { $0 as? any LoginScreenHandling }
    }
    /// The screen hooks, by identifier.
    public var screenHooks: [String: any ScreenHook] { plugins.compactMapValues { $0 as? any ScreenHook } }

    /// The hook chain of `screen`; a screen the manifest does not list gets an empty chain, which allows it.
    ///
    /// - Parameters:
    ///   - screen: The screen's name in the manifest.
    ///   - presenter: Replaces the presenter the set was built with, when given.
    public func chain(for screen: String, presenter: (any LoginPresenting)? = nil) -> ScreenHookChain {
        var chain = screens[screen] ?? ScreenHookChain(screen: screen, hooks: [], timeout: hookTimeout, presenter: self.presenter)
        if let presenter { chain.presenter = presenter }
        return chain
    }

    /// A runner for the startup hooks, each within the manifest's hook time limit unless `timeout` is given.
    public func startupRunner(timeout: Duration? = nil) -> StartupHookRunner {
        StartupHookRunner(hooks: startupHooks, timeout: timeout ?? hookTimeout)
    }
}
