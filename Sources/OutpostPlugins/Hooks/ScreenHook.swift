@_spi(OutpostInternal) public import OutpostCore

/// When a screen hook runs.
public enum ScreenHookStage: String, Sendable, Hashable, CaseIterable {
    /// Before the screen is shown: the hook may let it be shown, deny it, or require sign-in.
    case beforePresentation
    /// After the screen was launched (shown), e.g. to put an offer on top of it. A hook that is not
    /// ``ScreenHook/isRecurring`` runs at this stage once per ``ScreenPresentation``.
    case postLaunch
}

/// A sign-in a screen hook asks for, which the chain hands to its ``LoginPresenting``.
public struct LoginRequest: Sendable, Hashable {
    /// The identifier of the login provider to sign in with; `nil` for the presenter's default.
    public var provider: String?
    /// Parameters for ``LoginProvider/login(parameters:)``.
    public var parameters: [String: JSONValue]
    /// Why sign-in is needed, for the sign-in screen, e.g. "Premium videos need an account".
    public var reason: String?

    /// Creates a request.
    public init(provider: String? = nil, parameters: [String: JSONValue] = [:], reason: String? = nil) {
        self.provider = provider
        self.parameters = parameters
        self.reason = reason
    }
}

/// What a screen hook decided when it lets the flow go on. A hook that keeps the screen from being
/// shown throws instead (a ``PluginError`` with ``PluginError/Code/denied`` for a refusal).
public enum ScreenHookDecision: Sendable, Hashable {
    /// Let the flow go on, adding `data` to the dictionary the next hooks (and the screen) receive.
    case proceed(adding: [String: JSONValue] = [:])
    /// Sign in first. The chain presents login through its ``LoginPresenting``; when the login
    /// completes, the hook is asked again with ``ScreenHookContext/afterSignIn`` set.
    case requireSignIn(LoginRequest)
}

/// What a screen hook is asked about.
public struct ScreenHookContext: Sendable {
    /// The screen about to be shown (or just launched).
    public var screen: String
    /// The stage the chain runs.
    public var stage: ScreenHookStage
    /// The data dictionary: what the app passed in, plus what earlier hooks added.
    public var data: [String: JSONValue]
    /// How many times this hook ran before at this stage for the same ``ScreenPresentation`` (0 the first time).
    public var presentationIndex: Int
    /// `true` when the hook is asked again after a sign-in it required completed.
    public var afterSignIn: Bool

    /// Creates a context.
    public init(
        screen: String, stage: ScreenHookStage = .beforePresentation, data: [String: JSONValue] = [:],
        presentationIndex: Int = 0, afterSignIn: Bool = false
    ) {
        self.screen = screen
        self.stage = stage
        self.data = data
        self.presentationIndex = presentationIndex
        self.afterSignIn = afterSignIn
    }
}

/// Work that runs before a screen is shown (or after it was launched), and may keep it from being
/// shown: a paywall, a sign-in gate, a terms-of-use prompt, a parental PIN.
///
/// Hooks run in a ``ScreenHookChain``. A failure (a thrown error such as a denial, a time-out, a
/// cancelled sign-in) stops the chain only when the hook ``isFlowBlocker``; otherwise it is recorded
/// and the next hook runs.
public protocol ScreenHook: Sendable {
    /// A name for errors and logs; in a manifest, the plugin's identifier.
    var name: String { get }
    /// Whether a failure of this hook keeps the screen from being shown. `true` unless a hook says otherwise.
    var isFlowBlocker: Bool { get }
    /// The stages the hook runs at; ``ScreenHookStage/beforePresentation`` unless a hook says otherwise.
    var stages: Set<ScreenHookStage> { get }
    /// Whether the hook runs every time its stage runs for the same ``ScreenPresentation``, rather
    /// than once. `false` unless a hook says otherwise.
    var isRecurring: Bool { get }
    /// Decides. Throw to keep the screen from being shown: a ``PluginError`` keeps its code (use
    /// ``PluginError/Code/denied`` for a refusal, with a message for the user); any other error is
    /// reported as ``PluginError/Code/hookFailed``. Honour cancellation, which is how a time-out
    /// stops the hook.
    func evaluate(_ context: ScreenHookContext) async throws -> ScreenHookDecision
}

extension ScreenHook {
    public var isFlowBlocker: Bool { true }
    public var stages: Set<ScreenHookStage> { [.beforePresentation] }
    public var isRecurring: Bool { false }
}

/// Presents sign-in when a screen hook requires it: a sign-in screen, a browser, a terminal prompt.
/// Injected into a ``ScreenHookChain``.
public protocol LoginPresenting: Sendable {
    /// Presents sign-in for `request`, on behalf of `screen`, and returns once the user signed in.
    ///
    /// - Throws: ``PluginError``; ``PluginError/Code/loginCancelled`` when the user gave the sign-in up.
    func presentLogin(_ request: LoginRequest, screen: String) async throws
}
