@_spi(OutpostInternal) public import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

/// What running a screen's hooks came to when they let the screen be shown (or, after launch, stay).
/// When a flow-blocking hook fails, ``ScreenHookChain/run(_:data:presentation:)`` throws instead.
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
    /// The failures of hooks that are not flow blockers, in order.
    public var failures: [PluginError]
}

/// Runs a screen's hooks in order before the screen is shown (or after it was launched).
///
/// Each hook gets the data dictionary as the previous hooks left it, and a
/// ``ScreenHookDecision/proceed(adding:)`` adds to it. A hook that throws (a denial among others),
/// runs past ``timeout`` or requires a sign-in that does not complete has failed: if it
/// ``ScreenHook/isFlowBlocker`` the chain stops there, the screen is not shown and
/// ``run(_:data:presentation:)`` throws its failure; otherwise the failure is recorded and the next
/// hook runs with the data unchanged.
///
/// When a hook requires sign-in, the chain asks ``presenter`` to present login; the time the user
/// takes is not counted against the time limit. When the login completes, the hook is asked again
/// (``ScreenHookContext/afterSignIn``), so that it can check what it needs with the user now known.
///
/// ```swift
/// let chain = ScreenHookChain(screen: "premium", hooks: [paywall], presenter: ProviderLoginPresenter(providers: [oauth]))
/// do {
///     show(try await chain.run(data: ["item_id": "42"]).data)
/// } catch {
///     explain(error)  // a PluginError naming the hook and the screen
/// }
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
    /// - Returns: The data for the screen, and which hooks passed, were skipped or failed without blocking.
    /// - Throws: The ``PluginError`` of the flow-blocking hook that stopped the chain, with
    ///   ``PluginError/hook`` and ``PluginError/screen`` set.
    public func run(
        _ stage: ScreenHookStage = .beforePresentation, data: [String: JSONValue] = [:],
        presentation: ScreenPresentation? = nil
    ) async throws(PluginError) -> ScreenHookOutcome {
        let presentation = presentation ?? ScreenPresentation(screen: screen)
        var outcome = ScreenHookOutcome(screen: screen, stage: stage, data: data, passed: [], skipped: [], failures: [])
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
                if hook.isFlowBlocker { throw failure }
                outcome.failures.append(failure)
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
        let request: LoginRequest
        switch first {
        case .proceed(let added): return .success(added)
        case .requireSignIn(let asked): request = asked
        }
        guard let presenter else {
            return .failure(
                PluginError(
                    .noLoginPresenter,
                    "Screen hook '\(hook.name)' requires sign-in before screen '\(screen)' is shown, and there is no login presenter",
                    suggestion: "Give the chain a LoginPresenting (e.g. ProviderLoginPresenter) or sign in first",
                    plugin: request.provider, hook: hook.name, screen: screen))
        }
        do {
            try await presenter.presentLogin(request, screen: screen)
        } catch {
            return .failure(signInFailure(error, hook: hook, request: request))
        }
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
        case .success(.proceed(let added)):
            return .success(added)
        case .failure(let failure):
            return .failure(failure)
        }
    }

    /// The failure of a hook whose required sign-in did not complete: cancelled, or failed with `error`.
    private func signInFailure(_ error: any Error, hook: any ScreenHook, request: LoginRequest) -> PluginError {
        let login = error as? PluginError
        if error is CancellationError || login?.code == .loginCancelled {
            return PluginError(
                .signInCancelled, "The sign-in that screen hook '\(hook.name)' requires for screen '\(screen)' was cancelled",
                suggestion: "Sign in to open this screen", plugin: request.provider, hook: hook.name, screen: screen,
                underlying: login)
        }
        return PluginError(
            .signInFailed, "The sign-in that screen hook '\(hook.name)' requires for screen '\(screen)' failed",
            suggestion: login?.suggestion ?? "Try signing in again", plugin: request.provider, hook: hook.name,
            screen: screen, underlying: error)
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
