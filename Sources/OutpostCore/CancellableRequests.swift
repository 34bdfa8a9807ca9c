import Synchronization

/// Requests in flight that the underlying client can cancel by a handle (AsyncHTTPClient's
/// `HTTPClient.Task`), so that ``cancelAll()`` can end them at shutdown without a task of their own.
///
/// The whole-exchange deadline is the underlying client's (AsyncHTTPClient's deadline bounds the
/// head and the body of a request made through its delegate API), so unlike ``InFlightExchanges``
/// nothing here runs per request but two or three short locked sections: no task, no timer.
@_spi(OutpostInternal) public final class CancellableRequests<Handle: Sendable>: Sendable {
    private struct State {
        var next = 0
        var running: [Int: Handle] = [:]
        var isShutDown = false
    }

    private let state = Mutex(State())
    private let cancel: @Sendable (Handle) -> Void

    /// `cancel` ends one request; it is called outside the lock, at most once per handle.
    @_spi(OutpostInternal) public init(cancel: @escaping @Sendable (Handle) -> Void) {
        self.cancel = cancel
    }

    /// A number for a request about to start, or `nil` once ``cancelAll()`` has run.
    @_spi(OutpostInternal) public func reserve() -> Int? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            defer { state.next &+= 1 }
            return state.next
        }
    }

    /// Records the started request `id`. Returns `false`, having cancelled it, when ``cancelAll()``
    /// ran since ``reserve()``.
    @discardableResult
    @_spi(OutpostInternal) public func attach(_ handle: Handle, to id: Int) -> Bool {
        let isShutDown = state.withLock { state in
            if !state.isShutDown { state.running[id] = handle }
            return state.isShutDown
        }
        if isShutDown { cancel(handle) }
        return !isShutDown
    }

    /// Forgets request `id` once it has finished.
    @_spi(OutpostInternal) public func remove(_ id: Int) {
        _ = state.withLock { $0.running.removeValue(forKey: id) }
    }

    /// Cancels every request in flight and refuses new ones. Returns at once; the cancelled requests
    /// fail on their own threads.
    @_spi(OutpostInternal) public func cancelAll() {
        let running = state.withLock { state in
            state.isShutDown = true
            defer { state.running = [:] }
            return Array(state.running.values)
        }
        for handle in running { cancel(handle) }
    }
}
