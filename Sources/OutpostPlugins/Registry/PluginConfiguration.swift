@_spi(OutpostInternal) public import OutpostCore

/// A plugin's configuration (a JSON object) with typed readers that report a wrong or missing
/// value as ``PluginError/Code/invalidConfiguration``, naming the key and what it should be.
public struct PluginConfiguration: Sendable, Hashable {
    /// The configuration's keys and values.
    public let values: [String: JSONValue]
    /// The identifier of the plugin it configures, for errors.
    public let plugin: String

    /// Reads `json`, which must be an object; `null` counts as an empty object.
    /// - Throws: ``PluginError/Code/invalidConfiguration`` when it is anything else.
    public init(_ json: JSONValue, plugin: String) throws(PluginError) {
        switch json {
        case .object(let values): self.values = values
        case .null: self.values = [:]
        default:
            throw PluginError(
                .invalidConfiguration, "The configuration of plugin '\(plugin)' must be a JSON object, not \(json)",
                suggestion: "Write it as {\"key\": value, ...}", plugin: plugin, location: "configuration")
        }
        self.plugin = plugin
    }

    /// The value of `key`, if present and not `null`.
    public subscript(key: String) -> JSONValue? {
        guard let value = values[key], value != .null else { return nil }
        return value
    }

    /// A string, or `nil` when absent.
    public func string(_ key: String) throws(PluginError) -> String? {
        guard let value = self[key] else { return nil }
        guard let string = value.stringValue else { throw mistyped(key, value, expected: "a string") }
        return string
    }

    /// A string that must be present.
    public func requiredString(_ key: String) throws(PluginError) -> String {
        guard let string = try string(key) else {
            throw PluginError(
                .invalidConfiguration, "The configuration of plugin '\(plugin)' has no '\(key)'",
                suggestion: "Add \"\(key)\": \"...\" to it", plugin: plugin, location: "configuration.\(key)")
        }
        return string
    }

    /// A Boolean, or `fallback` when absent.
    public func bool(_ key: String, default fallback: Bool) throws(PluginError) -> Bool {
        guard let value = self[key] else { return fallback }
        guard let bool = value.boolValue else { throw mistyped(key, value, expected: "true or false") }
        return bool
    }

    /// A number of seconds as a `Duration`, or `fallback` when absent; it must not be negative.
    public func seconds(_ key: String, default fallback: Duration) throws(PluginError) -> Duration {
        guard let value = self[key] else { return fallback }
        guard let seconds = value.doubleValue, seconds >= 0, seconds.isFinite else {
            throw mistyped(key, value, expected: "a number of seconds, 0 or more")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// An object, or `nil` when absent.
    public func object(_ key: String) throws(PluginError) -> [String: JSONValue]? {
        guard let value = self[key] else { return nil }
        guard let object = value.objectValue else { throw mistyped(key, value, expected: "a JSON object") }
        return object
    }

    /// An array of strings, or `nil` when absent.
    public func strings(_ key: String) throws(PluginError) -> [String]? {
        guard let value = self[key] else { return nil }
        guard let array = value.arrayValue else { throw mistyped(key, value, expected: "an array of strings") }
        var strings: [String] = []
        for element in array {
            guard let string = element.stringValue else { throw mistyped(key, value, expected: "an array of strings") }
            strings.append(string)
        }
        return strings
    }

    private func mistyped(_ key: String, _ value: JSONValue, expected: String) -> PluginError {
        PluginError(
            .invalidConfiguration, "'\(key)' in the configuration of plugin '\(plugin)' must be \(expected), not \(value)",
            suggestion: "Fix the value of '\(key)'", plugin: plugin, location: "configuration.\(key)")
    }
}
