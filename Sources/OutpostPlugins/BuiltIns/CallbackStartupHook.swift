public import OutpostCallbacks

/// A ``StartupHook`` for ``StartupPhase/continueUserActivity``: routes the incoming x-callback-url
/// (the context's `url`) through a `CallbackRouter`. A URL the router refuses fails the hook with
/// ``PluginError/Code/routingFailed``, the `CallbackError` as ``PluginError/underlying``.
///
/// A context without `url` (another kind of user activity) is not this hook's business: it passes.
public struct CallbackStartupHook: StartupHook {
    /// The plugin type under which ``PluginRegistry/registerCallbackStartupHook(type:router:)`` registers it.
    public static let pluginType = "outpost.startup.callbacks"
    /// The context key that holds the URL.
    public static let urlKey = "url"

    public let name: String
    /// The router the URLs go to.
    public let router: CallbackRouter
    public var phases: Set<StartupPhase> { [.continueUserActivity] }

    /// Creates a hook.
    public init(name: String = "callbacks", router: CallbackRouter) {
        self.name = name
        self.router = router
    }

    public func run(phase: StartupPhase, context: [String: String]) async throws {
        guard phase == .continueUserActivity, let url = context[Self.urlKey] else { return }
        do {
            _ = try router.route(url)
        } catch {
            throw PluginError(
                .routingFailed, "The incoming URL could not be routed: \(error.description)",
                suggestion: Self.suggestion(for: error.code), plugin: name, hook: name, phase: phase, underlying: error)
        }
    }

    private static func suggestion(for code: CallbackError.Code) -> String {
        switch code {
        case .unknownScheme: return "Register an action for the URL's scheme on the router"
        case .unknownAction, .missingAction: return "Register the URL's action on the router, or fix the link"
        case .invalidHost: return "Send an x-callback-url: scheme://x-callback-url/action?..."
        case .routingDisabled: return "Enable routing on the router"
        default: return "Check the URL and the router's registrations"
        }
    }
}
