public import Foundation
@_spi(OutpostInternal) public import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// A JSON document that lists plugins, with their type and configuration, and screens, with their
/// hooks. A ``PluginRegistry`` builds a ``PluginSet`` from it.
///
/// ```json
/// {
///   "version": 1,
///   "plugins": [
///     {"id": "oauth", "type": "outpost.login.oauth", "configuration": {"interactive": true}},
///     {"id": "premium-gate", "type": "outpost.hook.access", "configuration": {"login_provider": "oauth"}}
///   ],
///   "screens": [{"name": "premium", "hooks": ["premium-gate"]}],
///   "startup": ["oauth"],
///   "hook_timeout_seconds": 10
/// }
/// ```
///
/// Every entry may also have a `description`. Unknown keys are errors, so a typo does not go unnoticed.
public struct PluginManifest: Sendable, Hashable {
    /// One plugin to build.
    public struct Plugin: Sendable, Hashable {
        /// The plugin's identifier, unique in the manifest (`id`).
        public var identifier: String
        /// The registered type that builds it (`type`).
        public var type: String
        /// Its configuration, a JSON object (`configuration`, `{}` when absent).
        public var configuration: JSONValue

        /// Creates an entry.
        public init(identifier: String, type: String, configuration: JSONValue = [:]) {
            self.identifier = identifier
            self.type = type
            self.configuration = configuration
        }
    }

    /// A screen and the hooks that guard it.
    public struct Screen: Sendable, Hashable {
        /// The screen's name (`name`).
        public var name: String
        /// The identifiers of its screen hooks, in the order they run (`hooks`).
        public var hooks: [String]
        /// The time limit of each hook's decision (`timeout_seconds`); the manifest's when `nil`.
        public var timeout: Duration?

        /// Creates an entry.
        public init(name: String, hooks: [String], timeout: Duration? = nil) {
            self.name = name
            self.hooks = hooks
            self.timeout = timeout
        }
    }

    /// The plugins, built in this order; a plugin may refer to those before it.
    public var plugins: [Plugin]
    /// The screens with hooks.
    public var screens: [Screen]
    /// The identifiers of the startup hooks, in the order they run (`startup`).
    public var startup: [String]
    /// The time limit of each hook (`hook_timeout_seconds`); 10 seconds when `nil`.
    public var hookTimeout: Duration?

    /// The manifest versions this library reads.
    public static let supportedVersions: ClosedRange<Int> = 1...1

    /// Creates a manifest.
    public init(plugins: [Plugin] = [], screens: [Screen] = [], startup: [String] = [], hookTimeout: Duration? = nil) {
        self.plugins = plugins
        self.screens = screens
        self.startup = startup
        self.hookTimeout = hookTimeout
    }

    /// Reads a manifest from JSON text.
    /// - Throws: ``PluginError/Code/malformedManifest`` saying where and what to fix.
    public init(data: Data) throws(PluginError) {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: data)
        } catch {
            throw PluginError(
                .malformedManifest, "The plugin manifest is not valid JSON",
                suggestion: "Check it with a JSON validator: look for a missing comma, quote or bracket", underlying: error)
        }
        try self.init(json: json)
    }

    /// Reads a manifest file.
    /// - Throws: ``PluginError/Code/malformedManifest`` when it cannot be read or is malformed.
    public init(contentsOf url: URL) throws(PluginError) {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw PluginError(
                .malformedManifest, "The plugin manifest at \(url.path) could not be read",
                suggestion: "Check the path and the file's permissions", underlying: error)
        }
        try self.init(data: data)
    }

    /// Reads a manifest from parsed JSON.
    /// - Throws: ``PluginError/Code/malformedManifest`` saying where and what to fix.
    public init(json: JSONValue) throws(PluginError) {
        let root = try Self.object(
            json, at: "(top level)", keys: ["version", "description", "plugins", "screens", "startup", "hook_timeout_seconds"])
        if let version = root["version"] {
            guard let number = version.intValue, Self.supportedVersions.contains(number) else {
                throw Self.malformed(
                    "version", "Manifest version \(version) is not supported",
                    suggestion: "Use \"version\": \(Self.supportedVersions.upperBound)")
            }
        }
        var plugins: [Plugin] = []
        var seen: [String: Int] = [:]
        for (index, entry) in try Self.array(root["plugins"], at: "plugins").enumerated() {
            let at = "plugins[\(index)]"
            let object = try Self.object(entry, at: at, keys: ["id", "type", "configuration", "description"])
            let identifier = try Self.string(object["id"], at: at + ".id")
            let type = try Self.string(object["type"], at: at + ".type")
            let configuration = object["configuration"] ?? [:]
            guard case .object = configuration else {
                throw Self.malformed(
                    at + ".configuration",
                    "The configuration of plugin '\(identifier)' must be a JSON object, not \(configuration)",
                    suggestion: "Write it as {\"key\": value, ...}, or leave it out")
            }
            if let earlier = seen[identifier] {
                throw PluginError(
                    .duplicateIdentifier, "Plugin id '\(identifier)' is used by plugins[\(earlier)] and \(at)",
                    suggestion: "Give each plugin its own id", plugin: identifier, location: at + ".id")
            }
            seen[identifier] = index
            plugins.append(Plugin(identifier: identifier, type: type, configuration: configuration))
        }
        var screens: [Screen] = []
        var screenNames: Set<String> = []
        for (index, entry) in try Self.array(root["screens"], at: "screens").enumerated() {
            let at = "screens[\(index)]"
            let object = try Self.object(entry, at: at, keys: ["name", "hooks", "timeout_seconds", "description"])
            let name = try Self.string(object["name"], at: at + ".name")
            guard screenNames.insert(name).inserted else {
                throw Self.malformed(
                    at + ".name", "Screen '\(name)' is listed twice", suggestion: "Merge its hooks into one entry")
            }
            let hooks = try Self.array(object["hooks"], at: at + ".hooks").enumerated().map {
                (hookIndex, hook) throws(PluginError) in
                try Self.string(hook, at: "\(at).hooks[\(hookIndex)]")
            }
            screens.append(
                Screen(
                    name: name, hooks: hooks, timeout: try Self.seconds(object["timeout_seconds"], at: at + ".timeout_seconds")))
        }
        let startup = try Self.array(root["startup"], at: "startup").enumerated().map { (index, hook) throws(PluginError) in
            try Self.string(hook, at: "startup[\(index)]")
        }
        self.init(
            plugins: plugins, screens: screens, startup: startup,
            hookTimeout: try Self.seconds(root["hook_timeout_seconds"], at: "hook_timeout_seconds"))
    }

    /// The manifest as JSON, in the shape ``init(json:)`` reads.
    public var json: JSONValue {
        var root: [String: JSONValue] = [
            "version": .int(Self.supportedVersions.upperBound),
            "plugins": .array(
                plugins.map { ["id": .string($0.identifier), "type": .string($0.type), "configuration": $0.configuration] }),
            "screens": .array(
                screens.map { screen in
                    var object: [String: JSONValue] = [
                        "name": .string(screen.name), "hooks": .array(screen.hooks.map(JSONValue.string)),
                    ]
                    if let timeout = screen.timeout { object["timeout_seconds"] = .double(timeout.inSeconds) }
                    return .object(object)
                }),
            "startup": .array(startup.map(JSONValue.string)),
        ]
        if let hookTimeout { root["hook_timeout_seconds"] = .double(hookTimeout.inSeconds) }
        return .object(root)
    }

    // MARK: Reading helpers

    private static func malformed(_ location: String, _ message: String, suggestion: String) -> PluginError {
        PluginError(.malformedManifest, message, suggestion: suggestion, location: location)
    }

    private static func object(_ value: JSONValue, at location: String, keys: Set<String>) throws(PluginError) -> [String:
        JSONValue]
    {
        guard let object = value.objectValue else {
            throw malformed(location, "Expected a JSON object, found \(value)", suggestion: "Write it as {...}")
        }
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw malformed(
                location, "Unknown key '\(unknown)'",
                suggestion: "Remove it or fix its spelling; the keys are: \(keys.sorted().joined(separator: ", "))")
        }
        return object
    }

    private static func array(_ value: JSONValue?, at location: String) throws(PluginError) -> [JSONValue] {
        guard let value, value != .null else { return [] }
        guard let array = value.arrayValue else {
            throw malformed(location, "Expected an array, found \(value)", suggestion: "Write it as [...]")
        }
        return array
    }

    private static func string(_ value: JSONValue?, at location: String) throws(PluginError) -> String {
        guard let value else {
            throw malformed(
                location, "Missing '\(location.split(separator: ".").last.map(String.init) ?? location)'",
                suggestion: "Add it: a non-empty string")
        }
        guard let string = value.stringValue, !string.isEmpty else {
            throw malformed(location, "Expected a non-empty string, found \(value)", suggestion: "Write it as \"...\"")
        }
        return string
    }

    private static func seconds(_ value: JSONValue?, at location: String) throws(PluginError) -> Duration? {
        guard let value, value != .null else { return nil }
        guard let seconds = value.doubleValue, seconds > 0, seconds.isFinite else {
            throw malformed(
                location, "Expected a number of seconds above 0, found \(value)", suggestion: "Write it as a number, e.g. 10")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}
