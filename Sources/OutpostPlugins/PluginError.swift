/// The one error type of OutpostPlugins: building plugins from a manifest, running startup and
/// screen hooks, signing in through a login provider, checking compliance.
///
/// Compare errors by ``code``; the set of codes is open, so switch over them with a `default`
/// case. An error names what it is about (``plugin``, ``hook``, ``screen``, ``phase``, the
/// manifest ``location``) and says what to do in ``suggestion``. It never carries a token.
public struct PluginError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in any release.
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The manifest is not JSON, or not shaped as a plugin manifest.
        public static let malformedManifest = Code(rawValue: "malformedManifest")
        /// A manifest entry names a plugin type that no factory is registered for.
        public static let unknownPluginType = Code(rawValue: "unknownPluginType")
        /// A manifest entry refers to a plugin identifier that the manifest does not define (yet).
        public static let unknownPlugin = Code(rawValue: "unknownPlugin")
        /// Two manifest entries use the same identifier.
        public static let duplicateIdentifier = Code(rawValue: "duplicateIdentifier")
        /// A plugin is used as something it is not, e.g. a login provider listed as a screen hook.
        public static let wrongPluginKind = Code(rawValue: "wrongPluginKind")
        /// A plugin's configuration is missing a value or has one of the wrong type.
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")
        /// A hook threw an error.
        public static let hookFailed = Code(rawValue: "hookFailed")
        /// A hook did not finish within its time limit.
        public static let timedOut = Code(rawValue: "timedOut")
        /// A screen hook denied the screen: it threw an error with this code.
        public static let denied = Code(rawValue: "denied")
        /// A screen hook requires sign-in and no ``LoginPresenting`` was given to present it.
        public static let noLoginPresenter = Code(rawValue: "noLoginPresenter")
        /// A screen hook still required sign-in after a login that completed.
        public static let signInRequired = Code(rawValue: "signInRequired")
        /// The user cancelled the sign-in a screen hook asked for.
        public static let signInCancelled = Code(rawValue: "signInCancelled")
        /// The sign-in a screen hook asked for failed.
        public static let signInFailed = Code(rawValue: "signInFailed")
        /// A login provider's login or logout failed.
        public static let loginFailed = Code(rawValue: "loginFailed")
        /// The user or the app gave a login provider's login up (closed the browser, cancelled the task).
        public static let loginCancelled = Code(rawValue: "loginCancelled")
        /// Nobody is signed in with the login provider (yet).
        public static let notSignedIn = Code(rawValue: "notSignedIn")
        /// A login is already in progress on this provider.
        public static let loginInProgress = Code(rawValue: "loginInProgress")
        /// The provider does not allow this operation, e.g. setting the user token.
        public static let notSupported = Code(rawValue: "notSupported")
        /// A compliance check could not get an answer, e.g. the server could not be reached.
        public static let complianceCheckFailed = Code(rawValue: "complianceCheckFailed")
        /// An incoming URL could not be routed.
        public static let routingFailed = Code(rawValue: "routingFailed")
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, in a sentence.
    public var message: String
    /// What to do about it, when there is something to do.
    public var suggestion: String?
    /// The plugin identifier (or plugin type) the error is about.
    public var plugin: String?
    /// The startup or screen hook the error is about.
    public var hook: String?
    /// The screen whose hooks were running.
    public var screen: String?
    /// The startup phase that was running.
    public var phase: StartupPhase?
    /// Where in the manifest the problem is, e.g. `plugins[2].configuration.cache_seconds`.
    public var location: String?
    /// The error that caused this one, if any.
    public var underlying: (any Error)?

    /// Creates an error; the library creates these, plugins and tests may too.
    public init(
        _ code: Code,
        _ message: String,
        suggestion: String? = nil,
        plugin: String? = nil,
        hook: String? = nil,
        screen: String? = nil,
        phase: StartupPhase? = nil,
        location: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.suggestion = suggestion
        self.plugin = plugin
        self.hook = hook
        self.screen = screen
        self.phase = phase
        self.location = location
        self.underlying = underlying
    }

    /// `true` when a hook ran past its time limit (``Code/timedOut``).
    public var timedOut: Bool { code == .timedOut }

    public var description: String {
        var text = ""
        if let location { text += "\(location): " }
        text += message
        if let underlying, !(underlying is PluginError) || code != (underlying as? PluginError)?.code {
            text += " (\(underlying))"
        }
        if let suggestion { text += ". \(suggestion)" }
        return text
    }
}

extension PluginError {
    /// Fills in the plugin and the manifest location where they are not yet known.
    func located(plugin: String?, location: String) -> PluginError {
        var copy = self
        if copy.plugin == nil { copy.plugin = plugin }
        if copy.location == nil {
            copy.location = location
        } else if let inner = copy.location, !inner.hasPrefix(location) {
            copy.location = location + "." + inner
        }
        return copy
    }
}
