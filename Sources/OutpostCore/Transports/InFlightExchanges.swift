import Synchronization

/// The exchanges a transport has in flight: each runs under the whole-exchange deadline of
/// ``TransportOptions/timeout`` (head and body), and ``cancelAll()`` ends them all at shutdown.
///
/// ``URLSessionTransport`` uses it (the AsyncHTTPClient transport's requests use AsyncHTTPClient's own
/// deadline and ``CancellableRequests`` instead), so a server that sends its headers and then stalls, or trickles
/// its body, fails with ``OutpostError/Code/timeout`` when the timeout is up, and a shut-down
/// transport returns at once instead of waiting for them.
///
/// Each exchange is one task, so that it can be cancelled without cancelling the caller. The
/// deadlines share one watchdog task, which sleeps until the earliest deadline in flight and cancels
/// the exchanges whose time is up: a request adds one task and two short locked sections, not a timer
/// of its own. (With one timeout for every request, a new deadline is never earlier than the armed
/// one, so the watchdog wakes about once per timeout period, not once per request.)
@_spi(OutpostInternal) public final class InFlightExchanges<Value: Sendable>: Sendable {
    private struct Exchange {
        var task: Task<Value, any Error>
        var deadline: ContinuousClock.Instant
        /// Cancelled by the watchdog because its deadline passed.
        var expired = false
    }

    private struct State {
        var next = 0
        var running: [Int: Exchange] = [:]
        var isShutDown = false
        /// When the watchdog wakes next; `nil` when no watchdog runs.
        var alarm: ContinuousClock.Instant?
        var watchdog: Task<Void, Never>?
        /// Changes whenever the watchdog is replaced, so that a replaced one stops.
        var generation = 0
    }

    private let state = Mutex(State())

    @_spi(OutpostInternal) public init() {}

    /// Runs `exchange`, failing with ``OutpostError/Code/timeout`` when it takes longer than
    /// `options.timeout`, and with ``OutpostError/Code/cancelled`` when the caller's task is cancelled
    /// or ``cancelAll()`` is called first. The exchange is cancelled in both cases.
    @_spi(OutpostInternal) public func run(
        options: TransportOptions, _ exchange: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let deadline = ContinuousClock.now.advanced(by: options.timeout)
        // Registered and started under the lock: once `cancelAll()` has run, no exchange starts.
        let started: (id: Int, task: Task<Value, any Error>, replaced: Task<Void, Never>?)? = state.withLock { state in
            guard !state.isShutDown else { return nil }
            let task = Task(operation: exchange)
            let id = state.next
            state.next &+= 1
            state.running[id] = Exchange(task: task, deadline: deadline)
            var replaced: Task<Void, Never>?
            if state.alarm.map({ deadline < $0 }) ?? true {
                replaced = state.watchdog
                state.generation &+= 1
                state.alarm = deadline
                state.watchdog = Self.watch(self, until: deadline, generation: state.generation)
            }
            return (id, task, replaced)
        }
        guard let (id, task, replaced) = started else {
            throw OutpostError(
                .cancelled, "The transport was shut down before the request was sent",
                suggestion: "Send requests before shutting the client down, or make a new client")
        }
        replaced?.cancel()
        let outcome: Result<Value, any Error>
        do {
            outcome = .success(
                try await withTaskCancellationHandler {
                    try await task.value
                } onCancel: {
                    task.cancel()
                })
        } catch {
            outcome = .failure(error)
        }
        let (finished, isShutDown) = state.withLock { ($0.running.removeValue(forKey: id), $0.isShutDown) }
        if finished?.expired == true {
            // Even a value: the cancellation may have cut it short.
            let underlying: any Error
            if case .failure(let error) = outcome { underlying = error } else { underlying = CancellationError() }
            throw OutpostError.transportTimeout(options, underlying: underlying)
        }
        switch outcome {
        case .success(let value):
            guard isShutDown, task.isCancelled else { return value }
            throw OutpostError(
                .cancelled, "The transport was shut down while the request was in flight", underlying: CancellationError())
        case .failure(let error):
            if isShutDown {
                throw OutpostError(
                    .cancelled, "The transport was shut down while the request was in flight", underlying: error)
            }
            throw error
        }
    }

    /// Starts a watchdog that sleeps until `alarm`, cancels the exchanges whose deadline has passed,
    /// and sleeps again until the earliest deadline left, while it is the current one.
    private static func watch(
        _ exchanges: InFlightExchanges, until alarm: ContinuousClock.Instant, generation: Int
    ) -> Task<Void, Never> {
        Task { [weak exchanges] in
            var alarm = alarm
            while true {
                do {
                    try await Task.sleep(until: alarm, clock: .continuous)
                } catch {
                    return  // replaced, or the transport shut down
                }
                guard let exchanges, let next = exchanges.expire(generation: generation) else { return }
                alarm = next
            }
        }
    }

    /// Cancels the exchanges past their deadline and returns the earliest deadline left, or `nil`
    /// (the watchdog stops) when none is left or another watchdog has taken over.
    private func expire(generation: Int) -> ContinuousClock.Instant? {
        let (expired, next) = state.withLock { state -> ([Task<Value, any Error>], ContinuousClock.Instant?) in
            guard state.generation == generation else { return ([], nil) }
            let now = ContinuousClock.now
            var expiredIDs: [Int] = []
            var earliest: ContinuousClock.Instant?
            for (id, exchange) in state.running where !exchange.expired {
                if exchange.deadline <= now {
                    expiredIDs.append(id)
                } else if earliest.map({ exchange.deadline < $0 }) ?? true {
                    earliest = exchange.deadline
                }
            }
            var tasks: [Task<Value, any Error>] = []
            for id in expiredIDs {
                state.running[id]?.expired = true
                if let task = state.running[id]?.task { tasks.append(task) }
            }
            state.alarm = earliest
            if earliest == nil { state.watchdog = nil }
            return (tasks, earliest)
        }
        for task in expired { task.cancel() }
        return next
    }

    /// Cancels every exchange in flight, refuses new ones, and returns when the cancelled ones have
    /// stopped (at once, unless the underlying client ignores cancellation).
    @_spi(OutpostInternal) public func cancelAll() async {
        let (running, watchdog) = state.withLock { state in
            state.isShutDown = true
            state.generation &+= 1
            state.alarm = nil
            let watchdog = state.watchdog
            state.watchdog = nil
            return (state.running.values.map(\.task), watchdog)
        }
        watchdog?.cancel()
        for task in running { task.cancel() }
        for task in running { _ = await task.result }
    }
}

/// Waiting for a shutdown that may hang.
@_spi(OutpostInternal) public enum ShutdownWait {
    /// Waits for `task` for at most `grace`, rethrowing its error if it ended in time; otherwise lets
    /// it finish in the background. (Awaiting `task.value` alone would not stop at the grace: an
    /// unstructured task's value ignores the waiter's cancellation.)
    @_spi(OutpostInternal) public static func waitBriefly(for task: Task<Void, any Error>, grace: Duration) async throws {
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
}
