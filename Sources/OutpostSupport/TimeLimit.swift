import Synchronization

/// How work run under a time limit ended.
@_spi(OutpostInternal) public enum TimeLimited<Value: Sendable>: Sendable {
    case value(Value)
    case error(any Error)
    case timedOut
}

/// Runs `body` and returns when it finishes or when `limit` has passed, whichever comes first.
///
/// The one deadline race of the package: plugin hooks, the server's plugin calls and file-lock
/// waits all use it.
///
/// On time-out the work is cancelled and left behind: a body that ignores cancellation cannot hold
/// its caller past the limit. Cancelling the caller cancels the work and returns
/// `.error(CancellationError())`.
@_spi(OutpostInternal) public func withTimeLimit<Value: Sendable>(
    _ limit: Duration, _ body: @escaping @Sendable () async throws -> Value
) async -> TimeLimited<Value> {
    let race = Race<Value>()
    return await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            guard race.start(continuation) else { return }
            let work = Task {
                do {
                    race.finish(.value(try await body()))
                } catch {
                    race.finish(.error(error))
                }
            }
            let timer = Task {
                do {
                    try await Task.sleep(for: limit)
                    race.finish(.timedOut)
                } catch {
                    // Cancelled: the work finished first.
                }
            }
            race.attach(work: work, timer: timer)
        }
    } onCancel: {
        race.finish(.error(CancellationError()))
    }
}

/// The shared state of one ``withTimeLimit(_:_:)`` call: the first outcome wins, resumes the
/// caller once, and cancels both tasks.
private final class Race<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<TimeLimited<Value>, Never>?
        var outcome: TimeLimited<Value>?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Keeps the continuation; resumes it at once (and returns `false`) when an outcome is already
    /// known, i.e. the caller was cancelled before the race began.
    func start(_ continuation: CheckedContinuation<TimeLimited<Value>, Never>) -> Bool {
        let early: TimeLimited<Value>? = state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            return nil
        }
        if let early {
            continuation.resume(returning: early)
            return false
        }
        return true
    }

    func attach(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let finished = state.withLock { state in
            if state.outcome != nil { return true }
            state.tasks = [work, timer]
            return false
        }
        if finished {
            work.cancel()
            timer.cancel()
        }
    }

    func finish(_ outcome: TimeLimited<Value>) {
        let won: (CheckedContinuation<TimeLimited<Value>, Never>?, [Task<Void, Never>])? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer {
                state.continuation = nil
                state.tasks = []
            }
            return (state.continuation, state.tasks)
        }
        guard let (continuation, tasks) = won else { return }
        for task in tasks { task.cancel() }
        continuation?.resume(returning: outcome)
    }
}
