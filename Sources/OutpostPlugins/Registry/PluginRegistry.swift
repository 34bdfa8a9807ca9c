public import Foundation

/// What a plugin factory gets: the entry's identifier, type and configuration, and the plugins
/// built before it (a screen hook may use a login provider defined earlier in the manifest).
public struct PluginBuildContext: Sendable {
    /// The identifier the plugin is built under.
    public let identifier: String
    /// The type it is built as.
    public let type: String
    /// Its configuration.
    public let configuration: PluginConfiguration
    private let built: [String: any Sendable]

    init(identifier: String, type: String, configuration: PluginConfiguration, built: [String: any Sendable]) {
        self.identifier = identifier
        self.type = type
        self.configuration = configuration
        self.built = built
    }

    /// The plugin built earlier under `identifier`, as a `Kind`.
    /// - Parameters:
    ///   - identifier: The plugin's identifier.
    ///   - kind: What it must be, e.g. `(any LoginProvider).self`.
    ///   - key: The configuration key that named it, for errors.
    /// - Throws: ``PluginError/Code/unknownPlugin`` when no earlier plugin has that identifier,
    ///   ``PluginError/Code/wrongPluginKind`` when it is not a `Kind`.
    public func plugin<Kind>(_ identifier: String, as kind: Kind.Type, key: String) throws(PluginError) -> Kind {
        guard let plugin = built[identifier] else {
            throw PluginError(
                .unknownPlugin,
                "'\(key)' in the configuration of plugin '\(self.identifier)' names '\(identifier)', which is not a plugin listed before it",
                suggestion:
                    "Define plugin '\(identifier)' earlier in the manifest, or fix the name; defined so far: \(built.keys.sorted().joined(separator: ", "))",
                plugin: self.identifier, location: "configuration.\(key)")
        }
        guard let typed = plugin as? Kind else {
            throw PluginError(
                .wrongPluginKind,
                "'\(key)' in the configuration of plugin '\(self.identifier)' names '\(identifier)', which is not \(PluginKind.describe(kind))",
                suggestion: "Name a plugin of the right kind", plugin: self.identifier, location: "configuration.\(key)")
        }
        return typed
    }

    /// The login provider named by the configuration key `key`.
    public func loginProvider(named key: String) throws(PluginError) -> any LoginProvider {
        try plugin(try configuration.requiredString(key), as: (any LoginProvider).self, key: key)
    }

    /// The compliance checker named by the configuration key `key`, or `nil` when the key is absent.
    public func compliance(named key: String) throws(PluginError) -> (any UserCompliance)? {
        guard let identifier = try configuration.string(key) else { return nil }
        return try plugin(identifier, as: (any UserCompliance).self, key: key)
    }
}

/// The kinds of plugin a manifest can hold. One value may be several (a login provider that is
/// also a startup hook).
enum PluginKind {
    static func describe(_ kind: Any.Type) -> String {
        if kind == (any LoginProvider).self { return "a login provider" }
        if kind == (any UserCompliance).self { return "a compliance checker" }
        if kind == (any LoginScreenHandling).self { return "a login screen handler" }
        if kind == (any ScreenHook).self { return "a screen hook" }
        if kind == (any StartupHook).self { return "a startup hook" }
        return "a \(kind)"
    }

    static func kinds(of plugin: any Sendable) -> [String] {
        var kinds: [String] = []
        if plugin is any LoginProvider { kinds.append("login provider") }
        if plugin is any UserCompliance { kinds.append("compliance checker") }
        if plugin is any LoginScreenHandling { kinds.append("login screen handler") }
        if plugin is any ScreenHook { kinds.append("screen hook") }
        if plugin is any StartupHook { kinds.append("startup hook") }
        return kinds
    }
}

/// Plugin types by identifier, and the builder of a ``PluginSet`` from a ``PluginManifest``.
///
/// ```swift
/// var registry = PluginRegistry()   // knows the built-in types that need nothing from the app
/// registry.registerOAuthLoginProvider { context in MySession(configuration: context.configuration) }
/// registry.registerEntitlementCompliance(client: client)
/// registry.register(type: "com.example.parental-pin") { context in try ParentalPin(context) }
/// let plugins = try registry.build(PluginManifest(contentsOf: manifestURL), presenter: presenter)
/// ```
///
/// A factory returns the plugin: a ``LoginProvider``, ``UserCompliance``, ``LoginScreenHandling``,
/// ``ScreenHook`` or ``StartupHook`` (or several at once). Registering a type again replaces its factory.
public struct PluginRegistry: Sendable {
    /// Builds one plugin from its manifest entry. Throw ``PluginError`` (e.g. from
    /// ``PluginConfiguration``'s readers) to report a bad configuration.
    public typealias Factory = @Sendable (PluginBuildContext) throws -> any Sendable

    private var factories: [String: Factory] = [:]

    /// Creates a registry that knows the built-in types that need nothing from the app:
    /// ``AccessScreenHook/pluginType``. Register the others (``registerOAuthLoginProvider(type:notificationCenter:makeSession:)``,
    /// ``registerEntitlementCompliance(type:client:)``, ``registerCallbackStartupHook(type:router:)``) yourself.
    public init() {
        register(type: AccessScreenHook.pluginType) { context in try AccessScreenHook(context) }
    }

    /// A registry that knows no type at all.
    public static var empty: PluginRegistry {
        var registry = PluginRegistry()
        registry.factories = [:]
        return registry
    }

    /// The registered types, sorted.
    public var types: [String] { factories.keys.sorted() }

    /// Registers (or replaces) the factory of `type`.
    public mutating func register(type: String, factory: @escaping Factory) {
        factories[type] = factory
    }

    /// Removes `type`.
    public mutating func unregister(type: String) {
        factories[type] = nil
    }

    /// Reads a manifest from JSON text and builds it; see ``build(_:presenter:)``.
    public func build(manifestData: Data, presenter: (any LoginPresenting)? = nil) throws(PluginError) -> PluginSet {
        try build(PluginManifest(data: manifestData), presenter: presenter)
    }

    /// Builds every plugin of `manifest`, in order, then the screens' hook chains and the startup hooks.
    ///
    /// - Parameters:
    ///   - manifest: The plugins, screens and startup hooks to build.
    ///   - presenter: Presents sign-in for the screens' hook chains.
    /// - Throws: ``PluginError`` naming the manifest entry at fault (``PluginError/location``):
    ///   ``PluginError/Code/unknownPluginType``, ``PluginError/Code/invalidConfiguration``,
    ///   ``PluginError/Code/unknownPlugin``, ``PluginError/Code/wrongPluginKind``.
    public func build(_ manifest: PluginManifest, presenter: (any LoginPresenting)? = nil) throws(PluginError) -> PluginSet {
        var built: [String: any Sendable] = [:]
        var order: [String] = []
        for (index, entry) in manifest.plugins.enumerated() {
            let at = "plugins[\(index)]"
            guard built[entry.identifier] == nil else {
                throw PluginError(
                    .duplicateIdentifier, "Plugin id '\(entry.identifier)' is used twice",
                    suggestion: "Give each plugin its own id",
                    plugin: entry.identifier, location: at + ".id")
            }
            guard let factory = factories[entry.type] else {
                throw PluginError(
                    .unknownPluginType, "Plugin '\(entry.identifier)' has type '\(entry.type)', which is not registered",
                    suggestion: "Fix the type or register a factory for it; registered types: \(types.joined(separator: ", "))",
                    plugin: entry.identifier, location: at + ".type")
            }
            let plugin: any Sendable
            do {
                let configuration = try PluginConfiguration(entry.configuration, plugin: entry.identifier)
                plugin = try factory(
                    PluginBuildContext(identifier: entry.identifier, type: entry.type, configuration: configuration, built: built)
                )
            } catch let error as PluginError {
                throw error.located(plugin: entry.identifier, location: at)
            } catch {
                throw PluginError(
                    .invalidConfiguration, "Plugin '\(entry.identifier)' of type '\(entry.type)' could not be built",
                    suggestion: "Check its configuration", plugin: entry.identifier, location: at, underlying: error)
            }
            guard !PluginKind.kinds(of: plugin).isEmpty else {
                throw PluginError(
                    .wrongPluginKind, "The factory of type '\(entry.type)' built \(type(of: plugin)), which is no kind of plugin",
                    suggestion: "Return a LoginProvider, UserCompliance, LoginScreenHandling, ScreenHook or StartupHook",
                    plugin: entry.identifier, location: at + ".type")
            }
            built[entry.identifier] = plugin
            order.append(entry.identifier)
        }
        let timeout = manifest.hookTimeout ?? .seconds(10)
        var screens: [String: ScreenHookChain] = [:]
        for (index, screen) in manifest.screens.enumerated() {
            var hooks: [any ScreenHook] = []
            for (hookIndex, identifier) in screen.hooks.enumerated() {
                hooks.append(
                    try Self.lookUp(
                        identifier, as: (any ScreenHook).self, in: built, usedBy: "Screen '\(screen.name)'",
                        location: "screens[\(index)].hooks[\(hookIndex)]"))
            }
            screens[screen.name] = ScreenHookChain(
                screen: screen.name, hooks: hooks, timeout: screen.timeout ?? timeout, presenter: presenter)
        }
        var startup: [any StartupHook] = []
        for (index, identifier) in manifest.startup.enumerated() {
            startup.append(
                try Self.lookUp(
                    identifier, as: (any StartupHook).self, in: built, usedBy: "The startup list", location: "startup[\(index)]"))
        }
        return PluginSet(
            plugins: built, order: order, screens: screens, startupHooks: startup, hookTimeout: timeout, presenter: presenter)
    }

    private static func lookUp<Kind>(
        _ identifier: String, as kind: Kind.Type, in built: [String: any Sendable], usedBy user: String, location: String
    ) throws(PluginError) -> Kind {
        guard let plugin = built[identifier] else {
            throw PluginError(
                .unknownPlugin, "\(user) lists '\(identifier)', which is not a plugin in the manifest",
                suggestion:
                    "Add a plugin with \"id\": \"\(identifier)\" or fix the name; the plugins are: \(built.keys.sorted().joined(separator: ", "))",
                plugin: identifier, location: location)
        }
        guard let typed = plugin as? Kind else {
            let kinds = PluginKind.kinds(of: plugin).joined(separator: " and ")
            throw PluginError(
                .wrongPluginKind, "\(user) lists '\(identifier)', which is a \(kinds), not \(PluginKind.describe(kind))",
                suggestion: "List only plugins of that kind there", plugin: identifier, location: location)
        }
        return typed
    }
}
