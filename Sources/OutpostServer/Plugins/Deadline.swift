import Synchronization

/// Runs `body` with a time limit, without waiting for a body that ignores cancellation: when the
/// limit passes, the caller gets `onTimeout()` at once and the body is cancelled in the background.
func withDeadline<T: Sendable>(
    _ limit: Duration, onTimeout: @escaping @Sendable () -> any Error, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let slot = ResultSlot<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            slot.install(continuation)
            let work = Task {
                do { slot.resume(.success(try await body())) } catch { slot.resume(.failure(error)) }
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                if !Task.isCancelled, slot.resume(.failure(onTimeout())) { work.cancel() }
            }
            slot.onFinish {
                work.cancel(); timer.cancel()
            }
        }
    } onCancel: {
        slot.resume(.failure(CancellationError()))
    }
}

/// A continuation resumed at most once, by whichever side gets there first.
private final class ResultSlot<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var cleanup: (@Sendable () -> Void)?
        var done = false
    }
    // Mutex makes this class Sendable without @unchecked.
    private let state = Mutex(State())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if runNow { cleanup() }
    }

    @discardableResult
    func resume(_ result: Result<T, any Error>) -> Bool {
        let (continuation, cleanup, won): (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?, Bool) =
            state.withLock { state in
                guard !state.done else { return (nil, nil, false) }
                state.done = true
                let continuation = state.continuation
                state.continuation = nil
                if continuation == nil { state.early = result }
                let cleanup = state.cleanup
                state.cleanup = nil
                return (continuation, cleanup, true)
            }
        continuation?.resume(with: result)
        cleanup?()
        return won
    }
}
