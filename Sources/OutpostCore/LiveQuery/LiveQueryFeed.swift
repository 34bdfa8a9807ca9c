import Synchronization

/// What a ``LiveQuery``'s source hands it: each new result (or failure), from any thread. The
/// feed keeps only the newest and applies it on the main actor in one job, so that a burst of
/// results between two turns of the main actor changes the query once.
package final class LiveQueryFeed<Item: Sendable>: Sendable {
    /// A result not yet applied: the records with the error found while reading them (`nil`
    /// when there was none), or an error alone, which keeps the records shown.
    package struct Update: Sendable {
        package var records: [LiveRecord<Item>]?
        package var error: (any Error)?
    }

    private struct State {
        var pending: Update?
        var flushScheduled = false
        var stopped = false
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let sink: @MainActor @Sendable (Update) -> Void

    init(sink: @escaping @MainActor @Sendable (Update) -> Void) {
        self.sink = sink
    }

    /// Runs `source` in a task of its own (off the main actor) until it returns or the feed stops.
    func start(_ source: @escaping @Sendable (LiveQueryFeed) async -> Void) {
        state.withLock { state in
            guard !state.stopped else { return }
            state.task = Task { await source(self) }
        }
    }

    /// A new result: `records`, and the error met while reading them, if any.
    package func submit(_ records: [LiveRecord<Item>], error: (any Error)? = nil) {
        enqueue(Update(records: records, error: error))
    }

    /// A failure that ends or interrupts the source; the records already shown stay.
    package func fail(_ error: any Error) {
        enqueue(Update(records: nil, error: error))
    }

    /// Whether ``stop()`` was called: a source ends when it sees this (or its task's cancellation).
    package var isStopped: Bool { state.withLock { $0.stopped } }

    /// Cancels the source's task and drops what was not applied; nothing reaches the query after.
    func stop() {
        let task = state.withLock { state in
            state.stopped = true
            state.pending = nil
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }

    private func enqueue(_ update: Update) {
        let schedule = state.withLock { state in
            guard !state.stopped else { return false }
            if update.records == nil, var pending = state.pending {
                pending.error = update.error
                state.pending = pending
            } else {
                state.pending = update
            }
            defer { state.flushScheduled = true }
            return !state.flushScheduled
        }
        if schedule { Task { @MainActor in self.flush() } }
    }

    @MainActor
    private func flush() {
        let update = state.withLock { state in
            state.flushScheduled = false
            defer { state.pending = nil }
            return state.stopped ? nil : state.pending
        }
        if let update { sink(update) }
    }
}
