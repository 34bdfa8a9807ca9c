@_spi(OutpostInternal) public import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// What running a screen's hooks came to.
public struct ScreenHookOutcome: Sendable {
    /// The screen.
    public var screen: String
    /// The stage that ran.
    public var stage: ScreenHookStage
    /// The data dictionary after the last hook that ran: what the app passed in plus what hooks added.
    public var data: [String: JSONValue]
    /// The hooks that let the flow go on, in order.
    public var passed: [String]
    /// The hooks left out because they are not recurring and already ran for this presentation.
    public var skipped: [String]
    /// Every failure, in order: those of non-blocking hooks, then the blocking one if any.
    public var failures: [PluginError]
    /// The failure of a flow-blocking hook that stopped the chain; `nil` when the screen may be shown.
    public var blockedBy: PluginError?

    /// Whether the screen may be shown (or, after launch, stay).
    public var isAllowed: Bool { blockedBy == nil }

    /// The data when the screen may be shown.
    /// - Throws: ``blockedBy`` when a blocking hook stopped the chain.
    public func get() throws(PluginError) -> [String: JSONValue] {
        if let blockedBy { throw blockedBy }
        return data
    }
}

/// Runs a screen's hooks in order before the screen is shown (or after it was launched).
///
/// Each hook gets the data dictionary as the previous hooks left it, and a
/// ``ScreenHookDecision/proceed(adding:)`` adds to it. A hook that denies, throws, runs past
/// ``timeout`` or requires a sign-in that does not complete has failed: if it
/// ``ScreenHook/isFlowBlocker`` the chain stops there and the screen is not shown; otherwise the
/// failure is recorded and the next hook runs with the data unchanged.
///
/// When a hook requires sign-in, the chain asks ``presenter`` to present login; the time the user
/// takes is not counted against the time limit. When the login completes, the hook is asked again
/// (``ScreenHookContext/afterSignIn``), so that it can check what it needs with the user now known.
///
/// ```swift
/// let chain = ScreenHookChain(screen: "premium", hooks: [paywall], presenter: ProviderLoginPresenter(providers: [oauth]))
/// let outcome = await chain.run(data: ["item_id": "42"])
/// if outcome.isAllowed { show(outcome.data) } else { explain(outcome.blockedBy) }
/// ```
public struct ScreenHookChain: Sendable {
    /// The screen the hooks guard.
    public var screen: String
    /// The hooks, in the order they run.
    public var hooks: [any ScreenHook]
    /// The longest one hook's decision may take (a sign-in it requires is not counted).
    public var timeout: Duration
    /// Presents sign-in when a hook requires it; without one, such a hook fails with
    /// ``PluginError/Code/noLoginPresenter``.
    public var presenter: (any LoginPresenting)?

    /// Creates a chain.
    public init(
        screen: String, hooks: [any ScreenHook], timeout: Duration = .seconds(10), presenter: (any LoginPresenting)? = nil
    ) {
        self.screen = screen
        self.hooks = hooks
        self.timeout = timeout
        self.presenter = presenter
    }

    /// Runs the hooks of `stage`, in order.
    /// - Parameters:
    ///   - stage: Before the screen is shown, or after it was launched.
    ///   - data: The data the first hook receives, e.g. `["item_id": "42"]`.
    ///   - presentation: The showing of the screen these runs are for; without one, every hook runs
    ///     as for a new showing.
    public func run(
        _ stage: ScreenHookStage = .beforePresentation, data: [String: JSONValue] = [:],
        presentation: ScreenPresentation? = nil
    ) async -> ScreenHookOutcome {
        let presentation = presentation ?? ScreenPresentation(screen: screen)
        var outcome = ScreenHookOutcome(
            screen: screen, stage: stage, data: data, passed: [], skipped: [], failures: [], blockedBy: nil)
        for hook in hooks where hook.stages.contains(stage) {
            let index = presentation.runCount(hook: hook.name, stage: stage)
            if index > 0 && !hook.isRecurring {
                outcome.skipped.append(hook.name)
                continue
            }
            let context = ScreenHookContext(screen: screen, stage: stage, data: outcome.data, presentationIndex: index)
            let result = await execute(hook, context)
            presentation.recordRun(hook: hook.name, stage: stage)
            switch result {
            case .success(let added):
                outcome.data.merge(added) { _, new in new }
                outcome.passed.append(hook.name)
            case .failure(let failure):
                outcome.failures.append(failure)
                if hook.isFlowBlocker {
                    outcome.blockedBy = failure
                    return outcome
                }
            }
        }
        return outcome
    }

    /// Asks `hook`, presents sign-in if it requires it, and asks again after a completed sign-in.
    private func execute(_ hook: any ScreenHook, _ context: ScreenHookContext) async -> Result<[String: JSONValue], PluginError> {
        let first: ScreenHookDecision
        switch await decide(hook, context) {
        case .success(let decision): first = decision
        case .failure(let failure): return .failure(failure)
        }
        guard case .requireSignIn(let request) = first else { return settle(first, hook: hook, stage: context.stage) }
        guard let presenter else {
            return .failure(
                PluginError(
                    .noLoginPresenter,
                    "Screen hook '\(hook.name)' requires sign-in before screen '\(screen)' is shown, and there is no login presenter",
                    suggestion: "Give the chain a LoginPresenting (e.g. ProviderLoginPresenter) or sign in first",
                    plugin: request.provider, hook: hook.name, screen: screen))
        }
        let login = await presenter.presentLogin(request, screen: screen)
        switch login.status {
        case .cancelled:
            return .failure(
                PluginError(
                    .signInCancelled, "The sign-in that screen hook '\(hook.name)' requires for screen '\(screen)' was cancelled",
                    suggestion: "Sign in to open this screen", plugin: request.provider, hook: hook.name, screen: screen))
        case .failed:
            return .failure(
                PluginError(
                    .signInFailed, "The sign-in that screen hook '\(hook.name)' requires for screen '\(screen)' failed",
                    suggestion: login.error?.suggestion ?? "Try signing in again", plugin: request.provider, hook: hook.name,
                    screen: screen, underlying: login.error))
        case .completed:
            var again = context
            again.afterSignIn = true
            switch await decide(hook, again) {
            case .success(.requireSignIn):
                return .failure(
                    PluginError(
                        .signInRequired,
                        "Screen hook '\(hook.name)' still requires sign-in for screen '\(screen)' after a completed sign-in",
                        suggestion: "Check that the login provider the hook asks for is the one the presenter signs in with",
                        plugin: request.provider, hook: hook.name, screen: screen))
            case .success(let decision):
                return settle(decision, hook: hook, stage: context.stage)
            case .failure(let failure):
                return .failure(failure)
            }
        }
    }

    /// Turns a final decision (not a sign-in request) into data or a denial.
    private func settle(_ decision: ScreenHookDecision, hook: any ScreenHook, stage: ScreenHookStage) -> Result<
        [String: JSONValue], PluginError
    > {
        switch decision {
        case .proceed(let added):
            return .success(added)
        case .deny(let reason):
            return .failure(
                PluginError(
                    .denied, "Screen hook '\(hook.name)' denied screen '\(screen)': \(reason)", hook: hook.name, screen: screen))
        case .requireSignIn:
            return .failure(
                PluginError(.signInRequired, "Screen hook '\(hook.name)' requires sign-in", hook: hook.name, screen: screen))
        }
    }

    /// Asks `hook` within the time limit.
    private func decide(_ hook: any ScreenHook, _ context: ScreenHookContext) async -> Result<ScreenHookDecision, PluginError> {
        switch await withTimeLimit(timeout, { try await hook.evaluate(context) }) {
        case .value(let decision):
            return .success(decision)
        case .timedOut:
            return .failure(
                PluginError(
                    .timedOut, "Screen hook '\(hook.name)' did not decide within \(timeout) for screen '\(screen)'",
                    suggestion: "Make the hook faster or raise the chain's timeout", hook: hook.name, screen: screen))
        case .error(var error as PluginError):
            if error.hook == nil { error.hook = hook.name }
            if error.screen == nil { error.screen = screen }
            return .failure(error)
        case .error(let error):
            return .failure(
                PluginError(
                    .hookFailed, "Screen hook '\(hook.name)' failed for screen '\(screen)'", hook: hook.name, screen: screen,
                    underlying: error))
        }
    }
}
