import Synchronization

/// The exchanges a transport has in flight: each runs under the whole-exchange deadline of
/// ``TransportOptions/timeout`` (head and body), and ``cancelAll()`` ends them all at shutdown.
///
/// Both built-in transports use it, so a server that sends its headers and then stalls, or trickles
/// its body, fails with ``OutpostError/Code/timeout`` when the timeout is up, and a shut-down
/// transport returns at once instead of waiting for them.
package final class InFlightExchanges: Sendable {
    private struct State {
        var next = 0
        var running: [Int: Running] = [:]
        var isShutDown = false
    }

    private struct Running {
        var cancel: @Sendable () -> Void
        var finished: @Sendable () async -> Void
    }

    private struct Expired: Error {}

    private let state = Mutex(State())

    package init() {}

    /// Runs `exchange`, failing with ``OutpostError/Code/timeout`` when it takes longer than
    /// `options.timeout`, and with ``OutpostError/Code/cancelled`` when the caller's task is cancelled
    /// or ``cancelAll()`` is called first. The exchange is cancelled in both cases.
    package func run<T: Sendable>(
        options: TransportOptions, _ exchange: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let timeout = options.timeout
        // Registered and started under the lock: once `cancelAll()` has run, no exchange starts.
        let started: (id: Int, task: Task<T, any Error>)? = state.withLock { state in
            guard !state.isShutDown else { return nil }
            let task = Task<T, any Error> {
                try await withThrowingTaskGroup(of: T?.self) { group in
                    group.addTask { try await exchange() }
                    group.addTask {
                        try await Task.sleep(for: timeout)
                        return nil
                    }
                    defer { group.cancelAll() }
                    guard let first = try await group.next(), let value = first else { throw Expired() }
                    return value
                }
            }
            let id = state.next
            state.next += 1
            state.running[id] = Running(cancel: { task.cancel() }, finished: { _ = await task.result })
            return (id, task)
        }
        guard let (id, task) = started else {
            throw OutpostError(
                .cancelled, "The transport was shut down before the request was sent",
                suggestion: "Send requests before shutting the client down, or make a new client")
        }
        defer { _ = state.withLock { $0.running.removeValue(forKey: id) } }
        do {
            return try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch is Expired {
            throw OutpostError.transportTimeout(options, underlying: CancellationError())
        } catch {
            if state.withLock({ $0.isShutDown }) {
                throw OutpostError(
                    .cancelled, "The transport was shut down while the request was in flight", underlying: error)
            }
            throw error
        }
    }

    /// Waits for `task` for at most `grace`, rethrowing its error if it ended in time; otherwise lets
    /// it finish in the background. (Awaiting `task.value` alone would not stop at the grace: an
    /// unstructured task's value ignores the waiter's cancellation.)
    package static func waitBriefly(for task: Task<Void, any Error>, grace: Duration) async throws {
        let (outcomes, outcome) = AsyncStream<Result<Void, any Error>?>.makeStream()
        let waiter = Task { outcome.yield(await task.result) }
        let timer = Task {
            try? await Task.sleep(for: grace)
            outcome.yield(nil)
        }
        var iterator = outcomes.makeAsyncIterator()
        let first = await iterator.next() ?? nil
        outcome.finish()
        timer.cancel()
        _ = waiter
        if case .failure(let error)? = first { throw error }
    }

    /// Cancels every exchange in flight, refuses new ones, and returns when the cancelled ones have
    /// stopped (at once, unless the underlying client ignores cancellation).
    package func cancelAll() async {
        let running = state.withLock { state in
            state.isShutDown = true
            return Array(state.running.values)
        }
        for exchange in running { exchange.cancel() }
        for exchange in running { await exchange.finished() }
    }
}
