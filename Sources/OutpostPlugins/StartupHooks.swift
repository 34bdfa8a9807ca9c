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

/// Why a startup phase did not complete.
public struct StartupHookFailure: Error, Sendable, CustomStringConvertible {
    public var hook: String
    public var phase: StartupPhase
    /// `true` when the hook ran past the runner's timeout.
    public var timedOut: Bool
    public var underlying: (any Error)?

    public var description: String {
        timedOut
            ? "Startup hook '\(hook)' did not finish within its time limit at phase \(phase.rawValue); make it faster or raise the limit"
            : "Startup hook '\(hook)' failed at phase \(phase.rawValue): \(underlying.map { "\($0)" } ?? "unknown error")"
    }
}

/// Runs startup hooks in the order they were given, one at a time, each within a time limit.
public struct StartupHookRunner: Sendable {
    public var hooks: [any StartupHook]
    public var timeout: Duration

    public init(hooks: [any StartupHook], timeout: Duration = .seconds(10)) {
        self.hooks = hooks
        self.timeout = timeout
    }

    /// Runs the hooks registered for `phase`, in order, and stops at the first failure.
    ///
    /// - Returns: the names of the hooks that ran.
    /// - Throws: ``StartupHookFailure`` naming the hook that failed or timed out.
    @discardableResult
    public func run(_ phase: StartupPhase, context: [String: String] = [:]) async throws -> [String] {
        var ran: [String] = []
        for hook in hooks where hook.phases.contains(phase) {
            let timeout = self.timeout
            let outcome: Result<Void, StartupHookFailure> = await withTaskGroup(of: Result<Void, StartupHookFailure>?.self) { group in
                group.addTask {
                    do {
                        try await hook.run(phase: phase, context: context)
                        return .success(())
                    } catch {
                        return .failure(StartupHookFailure(hook: hook.name, phase: phase, timedOut: false, underlying: error))
                    }
                }
                group.addTask {
                    do { try await Task.sleep(for: timeout) } catch { return nil }
                    return .failure(StartupHookFailure(hook: hook.name, phase: phase, timedOut: true, underlying: nil))
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first ?? .failure(StartupHookFailure(hook: hook.name, phase: phase, timedOut: false, underlying: CancellationError()))
            }
            try outcome.get()
            ran.append(hook.name)
        }
        return ran
    }
}
