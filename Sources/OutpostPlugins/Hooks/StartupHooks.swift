@_spi(OutpostInternal) import OutpostSupport

/// The phases of an app's life at which startup hooks run.
public enum StartupPhase: String, Sendable, CaseIterable {
    /// Loading plugins or account data failed.
    case loadingFailed
    /// Plugins and account data are loaded.
    case launch
    /// Before the first screen is shown.
    case applicationReady
    /// After the first screen is shown.
    case firstScreenShown
    /// An incoming user activity, such as a URL sent by another app.
    case continueUserActivity
}

/// Work an app or plugin wants done at a phase of startup, e.g. a silent sign-in at launch.
public protocol StartupHook: Sendable {
    /// A name for errors and logs.
    var name: String { get }
    /// The phases the hook runs at.
    var phases: Set<StartupPhase> { get }
    /// Does the work. Throw to report a failure; honour cancellation, which is how a timeout stops it.
    func run(phase: StartupPhase, context: [String: String]) async throws
}

/// Why a startup phase did not complete: a ``PluginError`` with ``PluginError/hook`` and
/// ``PluginError/phase`` set, and the code ``PluginError/Code/hookFailed`` (the hook threw; see
/// ``PluginError/underlying``), ``PluginError/Code/timedOut``, or the code of a `PluginError` the
/// hook threw itself.
public typealias StartupHookFailure = PluginError

/// Runs startup hooks in the order they were given, one at a time, each within a time limit.
public struct StartupHookRunner: Sendable {
    /// The hooks, in the order they run.
    public var hooks: [any StartupHook]
    /// The longest one hook may take. A hook past it is cancelled and left behind, so a hook that
    /// ignores cancellation cannot hold up startup.
    public var timeout: Duration

    /// Creates a runner.
    public init(hooks: [any StartupHook], timeout: Duration = .seconds(10)) {
        self.hooks = hooks
        self.timeout = timeout
    }

    /// Runs the hooks registered for `phase`, in order, and stops at the first failure.
    ///
    /// - Returns: the names of the hooks that ran.
    /// - Throws: ``StartupHookFailure`` (a ``PluginError``) naming the hook that failed or timed out.
    @discardableResult
    public func run(_ phase: StartupPhase, context: [String: String] = [:]) async throws(StartupHookFailure) -> [String] {
        var ran: [String] = []
        for hook in hooks where hook.phases.contains(phase) {
            switch await withTimeLimit(timeout, { try await hook.run(phase: phase, context: context) }) {
            case .value:
                ran.append(hook.name)
            case .timedOut:
                throw PluginError(
                    .timedOut,
                    "Startup hook '\(hook.name)' did not finish within \(timeout) at phase \(phase.rawValue)",
                    suggestion: "Make the hook faster, move slow work out of startup, or raise the runner's timeout",
                    hook: hook.name, phase: phase)
            case .error(let error):
                throw Self.failure(error, hook: hook, phase: phase)
            }
        }
        return ran
    }

    private static func failure(_ error: any Error, hook: any StartupHook, phase: StartupPhase) -> PluginError {
        if var error = error as? PluginError {
            if error.hook == nil { error.hook = hook.name }
            if error.phase == nil { error.phase = phase }
            return error
        }
        return PluginError(
            .hookFailed, "Startup hook '\(hook.name)' failed at phase \(phase.rawValue)",
            hook: hook.name, phase: phase, underlying: error)
    }
}
