import Synchronization

/// Blocking jobs that must run one at a time and in order (the writes of one cache folder, of one
/// accounts file), on the threads of a ``BlockingPool``, never on the cooperative pool.
///
/// The queue holds no thread: while it has work, one job of the pool runs its jobs in turn, then
/// returns the thread to the pool.
@_spi(OutpostInternal) public final class SerialBlockingQueue: Sendable {
    private struct State {
        var pending: [@Sendable () -> Void] = []
        var isRunning = false
    }

    private let pool: BlockingPool
    private let state = Mutex(State())

    /// A queue whose jobs run on `pool` (by default the pool the client modules share).
    @_spi(OutpostInternal) public init(pool: BlockingPool = .shared) {
        self.pool = pool
    }

    /// Runs `job` after every job queued before it, without waiting for it.
    @_spi(OutpostInternal) public func start(_ job: @escaping @Sendable () -> Void) {
        let startRunner = state.withLock { state in
            state.pending.append(job)
            defer { state.isRunning = true }
            return !state.isRunning
        }
        if startRunner { pool.submit { [self] in runPending() } }
    }

    /// Runs `body` after every job queued before it and returns its result.
    @_spi(OutpostInternal) public func run<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value
    {
        let result: Result<Value, any Error> = await withCheckedContinuation { continuation in
            start { continuation.resume(returning: Result { try body() }) }
        }
        return try result.get()
    }

    /// Returns once every job queued before it has run.
    @_spi(OutpostInternal) public func drain() async {
        await withCheckedContinuation { continuation in start { continuation.resume() } }
    }

    /// On a pool thread: runs the jobs in order until none is left.
    private func runPending() {
        while true {
            let next: (@Sendable () -> Void)? = state.withLock { state in
                guard !state.pending.isEmpty else {
                    state.isRunning = false
                    return nil
                }
                return state.pending.removeFirst()
            }
            guard let next else { return }
            next()
        }
    }
}
