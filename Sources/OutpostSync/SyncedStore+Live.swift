import OutpostCore
import Synchronization

/// A ``SyncedStore`` following one type's change feed (``SyncedStore/follow(_:backoff:resume:)``):
/// changes made elsewhere reach the store as they happen, and it reconnects by itself.
public final class LiveSync: Sendable {
    /// The type followed.
    public let type: String
    /// Each state the connection goes through, from ``SyncConnectionState/connecting`` to
    /// ``SyncConnectionState/stopped``, where it ends. It buffers the newest 16 states.
    public let states: AsyncStream<SyncConnectionState>
    private let task: Mutex<Task<Void, Never>?>

    init(type: String, states: AsyncStream<SyncConnectionState>, task: Task<Void, Never>) {
        self.type = type
        self.states = states
        self.task = Mutex(task)
    }

    deinit { task.withLock { $0?.cancel() } }

    /// Stops following (the states end with ``SyncConnectionState/stopped``) and waits until no
    /// change is being applied. The store keeps its position: ``SyncedStore/pull(_:)`` or a new
    /// follow goes on from there.
    public func stop() async {
        guard let running = task.withLock({ $0.take() }) else { return }
        running.cancel()
        await running.value
    }
}

extension SyncedStore {
    /// Follows `type`'s change feed: catches up (loading the type first if it never was), keeps
    /// the stream open, applies each change as it arrives, and reconnects from the store's
    /// position whenever the stream ends or fails.
    ///
    /// Failures wait `backoff` between attempts; a signal from `resume` (the network path came
    /// back, the app returned to the foreground) ends the wait at once. After 410
    /// `changes_expired` or `unknown_position` the type is loaded again, keeping local writes, as
    /// ``pull(_:)`` does. Applying a change waits for a running ``pull(_:)`` or ``push()``.
    ///
    /// ```swift
    /// let live = try store.follow("notes")
    /// for await state in live.states { banner.show(state) }
    /// ```
    ///
    /// - Parameters:
    ///   - type: the records' type.
    ///   - backoff: the waits between failed attempts.
    ///   - resume: when to stop waiting early; by default the system's signals on Apple platforms.
    /// - Returns: the running follow; call ``LiveSync/stop()`` to end it (it keeps the store open
    ///   until then).
    /// - Throws: ``SyncError`` for an invalid type or a store without a client.
    public nonisolated func follow(
        _ type: String, backoff: SyncBackoff = SyncBackoff(), resume: any SyncResumeSignals = PlatformResumeSignals()
    ) throws -> LiveSync {
        try RecordNames.check(type: type)
        let client = try requireClient()
        let (states, sink) = AsyncStream.makeStream(of: SyncConnectionState.self, bufferingPolicy: .bufferingNewest(16))
        let task = Task {
            let wakeup = Wakeup()
            let signals = Task {
                for await _ in resume.resumptions() { wakeup.wake() }
            }
            var failures = 0
            while !Task.isCancelled {
                sink.yield(.connecting)
                let opened = ContinuousClock.now
                let reason: String
                do {
                    try await self.followOnce(type, client: client) {
                        wakeup.clear()
                        sink.yield(.live)
                    }
                    // The server ended the stream (a restart, its longest stream time): go on at
                    // once, unless that keeps happening straight away.
                    failures = ContinuousClock.now - opened < .seconds(1) ? failures + 1 : 0
                    if failures == 0 { continue }
                    reason = "the server ended the change stream of \(type) at once"
                } catch {
                    if Task.isCancelled { break }
                    failures += 1
                    reason = (error as? OutpostError)?.message ?? "\(error)"
                }
                let delay = backoff.delay(after: failures)
                sink.yield(.waiting(retryIn: delay, attempt: failures, reason: reason))
                await wakeup.wait(upTo: delay)
            }
            signals.cancel()
            sink.yield(.stopped)
            sink.finish()
        }
        return LiveSync(type: type, states: states, task: task)
    }

    /// One connection: catch up, then follow the stream until it ends.
    func followOnce(_ type: String, client: OutpostClient, ready: @escaping @Sendable () -> Void) async throws {
        let reader = ChangeReader(client: client, type: type)
        let position = try await exclusive { store in
            try await store.pullNow(type, client: client)
            return try await store.position(of: type)
        }
        let database = self.database
        let limit = limits.limit(of: type)
        do {
            try await reader.follow(after: position, ready: ready) { changes, reached in
                try await self.exclusive { _ in
                    try await database.write { db in
                        try Self.apply(changes, type: type, reaching: reached, limit: limit, in: db)
                    }
                }
            }
        } catch let error as OutpostError
            where error.status == 410 && ["changes_expired", "unknown_position"].contains(error.serverCode ?? "")
        {
            // Expired between the catch-up and the stream: the next connection reloads.
            try await exclusive { store in try await store.forgetPosition(of: type) }
            throw error
        }
    }

    func position(of type: String) async throws -> Int64 {
        try await database.read { db in
            try String.fetchOne(db, sql: "SELECT position FROM positions WHERE type = ?", arguments: [type])
                .flatMap { Int64($0) } ?? 0
        }
    }

    func forgetPosition(of type: String) async throws {
        try await database.write { db in try db.execute(sql: "DELETE FROM positions WHERE type = ?", arguments: [type]) }
    }
}

/// Ends a backoff wait early: ``wake()`` from the resume signals, ``wait(upTo:)`` in the follow loop.
final class Wakeup: Sendable {
    private let state = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    /// Ends the current wait, or the next one if none is running.
    func wake() {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return CheckedContinuation<Void, Never>?.none
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Forgets a wake that came while no wait ran (the connection is live again).
    func clear() { state.withLock { $0.pending = false } }

    /// Waits `delay`, or less when woken.
    func wait(upTo delay: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: delay) }
            group.addTask { await self.next() }
            await group.next()
            group.cancelAll()
        }
    }

    private func next() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
