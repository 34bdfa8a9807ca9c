/// The one error type of OutpostCallbacks: routing an incoming URL, answering it, or calling
/// another app.
///
/// Switch on ``code``; the set of codes may grow, so keep a `default` branch. Routing errors
/// carry ``callback``, what could be parsed before the check that failed (`nil` when the
/// scheme or the host was rejected), so that a caller can still answer through `x-error`.
public struct CallbackError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. An open set: new codes may be added.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unknownScheme, invalidHost, missingAction, unknownAction, routingDisabled
            case remoteError, remoteCancelled, timedOut, cannotOpen, storeFailed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The code's name, e.g. `unknownScheme`; stable, used in the CLI's JSON output.
        public var name: String { base.rawValue }
        public var description: String { base.rawValue }

        /// The URL has no scheme, or no action is registered for its scheme.
        public static let unknownScheme = Code(.unknownScheme)
        /// The host is not `x-callback-url` (compared case-insensitively).
        public static let invalidHost = Code(.invalidHost)
        /// The path names no action.
        public static let missingAction = Code(.missingAction)
        /// No target is registered for the action under this scheme.
        public static let unknownAction = Code(.unknownAction)
        /// Routing is switched off on the router.
        public static let routingDisabled = Code(.routingDisabled)
        /// The other app answered an outgoing call through `x-error`.
        public static let remoteError = Code(.remoteError)
        /// The other app answered an outgoing call through `x-cancel`.
        public static let remoteCancelled = Code(.remoteCancelled)
        /// No answer to an outgoing call arrived in time.
        public static let timedOut = Code(.timedOut)
        /// The URL opener could not open the URL of an outgoing call.
        public static let cannotOpen = Code(.cannotOpen)
        /// The pending-call store could not be read or written.
        public static let storeFailed = Code(.storeFailed)
    }

    /// What went wrong.
    public var code: Code
    /// The URL that was routed, opened or expected.
    public var url: String?
    /// For routing errors: what could be parsed (`nil` when the scheme or the host failed).
    public var callback: Callback?
    /// For ``Code/remoteError``: the other app's `errorCode`.
    public var remoteCode: String?
    /// For ``Code/remoteError``: the other app's `errorMessage`.
    public var remoteMessage: String?
    /// More detail, such as an underlying file-system error.
    public var detail: String?

    /// Creates an error; the library creates these, tests may too.
    public init(
        code: Code, url: String? = nil, callback: Callback? = nil, remoteCode: String? = nil,
        remoteMessage: String? = nil, detail: String? = nil
    ) {
        self.code = code
        self.url = url
        self.callback = callback
        self.remoteCode = remoteCode
        self.remoteMessage = remoteMessage
        self.detail = detail
    }

    public var description: String {
        let shownURL = url.map(Self.abbreviated) ?? "(none)"
        var text: String
        switch code {
        case .unknownScheme:
            text =
                "No actions are registered for the scheme of \(shownURL). Register an action for that scheme on the router, or check that the URL starts with 'scheme://'."
        case .invalidHost:
            text = "\(shownURL) is not an x-callback-url: its host must be 'x-callback-url' (scheme://x-callback-url/action?...)."
        case .missingAction:
            text = "\(shownURL) names no action: put the action in the path (scheme://x-callback-url/action)."
        case .unknownAction:
            let action = callback?.action ?? "?"
            text =
                "No target is registered for the action '\(action)' of \(shownURL). Register it on the router; actions match case-sensitively."
        case .routingDisabled:
            text = "Routing is switched off, so \(shownURL) was not routed. Set isEnabled on the router to route it."
        case .remoteError:
            text =
                "The other app answered with an error (errorCode: \(remoteCode ?? "none"), errorMessage: \(remoteMessage ?? "none")). Check the request's parameters or the other app's state."
        case .remoteCancelled:
            text = "The other app cancelled the request \(shownURL). Nothing was done; ask the user before calling again."
        case .timedOut:
            text =
                "No answer to \(shownURL) arrived in time. The other app may not be installed or may not answer; a late answer is delivered through lateReplies when a store is configured."
        case .cannotOpen:
            text = "\(shownURL) could not be opened. Check that an app handles its scheme (on Linux, that xdg-open knows it)."
        case .storeFailed:
            text = "The pending-call store could not be used. Check that its folder exists and is writable by this user."
        default:
            text = "x-callback-url error \(code.name) for \(shownURL)."
        }
        if let detail { text += " (\(detail))" }
        return text
    }

    /// Keeps descriptions readable when the URL is huge.
    static func abbreviated(_ url: String) -> String {
        let limit = 200
        if url.utf8.count <= limit { return "'\(url)'" }
        return "'\(url.prefix(limit))…' (\(url.utf8.count) bytes)"
    }
}
