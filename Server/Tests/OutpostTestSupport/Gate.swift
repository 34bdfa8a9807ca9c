import Synchronization

/// Suspends callers until opened; opening lets every present and future caller through.
///
/// Shared by the test targets (`OutpostTestSupport`), so that a test waits on an event rather
/// than sleeping.
package final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    /// One element each time a caller reaches ``wait()``.
    package let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation

    package init() {
        (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
    }

    /// Waits until ``open()`` is called (returns at once after it).
    package func wait() async {
        arrived.yield()
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Lets every waiting and future caller through.
    package func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether ``open()`` was called.
    package var isOpen: Bool { state.withLock { $0.open } }
}

/// A flag (and a count of how often it was set) shared across threads and tasks.
package final class Flag: Sendable {
    private let times = Mutex(0)

    package init() {}

    /// Sets the flag once more.
    package func set() { times.withLock { $0 += 1 } }

    /// Whether ``set()`` was called.
    package var isSet: Bool { count > 0 }

    /// How often ``set()`` was called.
    package var count: Int { times.withLock { $0 } }
}
