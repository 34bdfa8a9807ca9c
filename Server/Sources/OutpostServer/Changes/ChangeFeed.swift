import CoreMetrics
import Foundation
import Logging
@_spi(OutpostInternal) import OutpostSupport
import ServiceLifecycle
import Synchronization

/// The shared notifier behind every change stream of one server.
///
/// Subscribers do not poll. An idle subscriber is a suspended continuation in ``waiters``; it is
/// resumed when new changes arrive, on a heartbeat, or at shutdown. New changes are found by one
/// read for all subscribers, after each local record write (``changesCommitted()``) and every
/// ``ChangeFeedConfiguration/pollInterval`` while anyone subscribes (for writes through other
/// instances sharing the database). The last ``ChangeFeedConfiguration/bufferSize`` changes stay
/// in memory, so subscribers that keep up read no database at all; one that fell further behind
/// reads its own type from storage until it catches up.
///
/// It runs as a service next to the HTTP server: its graceful shutdown ends every stream, so the
/// HTTP server's own shutdown (which waits for responses in flight) is not held up by them.
package final class ChangeFeed: Service, Sendable {
    /// Why ``wait(_:seen:)`` returned.
    enum Wake: Sendable, Equatable {
        case changes, heartbeat, closed
    }

    /// What a subscriber saw last: the feed's generation and heartbeat count.
    struct Seen: Sendable {
        var generation: UInt64
        var beats: UInt64
    }

    /// A place among the subscribers, released by ``leave(_:)``.
    struct Ticket: Sendable {
        let id: Int
        /// Whose place it is (``Holder/key``), `nil` for places not counted per holder.
        var holder: Holder? = nil
    }

    /// Who holds a stream: bounded per holder (``ChangeFeedConfiguration/maxStreamsPerUser`` and
    /// ``ChangeFeedConfiguration/maxStreamsPerAddress``), and anonymous ones in all
    /// (``ChangeFeedConfiguration/maxAnonymousSubscribers``).
    enum Holder: Sendable, Hashable {
        /// A signed-in user, or a client signed in without one (client credentials).
        case signedIn(String)
        /// A caller without a token, by client address.
        case anonymous(address: String)

        var isAnonymous: Bool { if case .anonymous = self { true } else { false } }
    }

    struct State: Sendable {
        /// Every change at or below `head` was read into `buffer` (or dropped from its front).
        var head: Int64 = 0
        /// The buffer holds every change in `(floor, head]`.
        var floor: Int64 = 0
        var primed = false
        var buffer: [RecordChange] = []
        /// The record bytes the buffer holds.
        var bufferBytes = 0
        var generation: UInt64 = 0
        var beats: UInt64 = 0
        /// The waiting subscribers, with the record type each follows (`nil`: every type), and their
        /// ids by type, so that a write finds the subscribers of its type without going through others.
        var waiters: [Int: (type: String?, continuation: CheckedContinuation<Wake, Never>)] = [:]
        var waitingByType: [String: Set<Int>] = [:]
        var waitingForAny: Set<Int> = []

        mutating func addWaiter(_ id: Int, type: String?, _ continuation: CheckedContinuation<Wake, Never>) {
            waiters[id] = (type, continuation)
            if let type { waitingByType[type, default: []].insert(id) } else { waitingForAny.insert(id) }
        }

        mutating func removeWaiter(_ id: Int) -> CheckedContinuation<Wake, Never>? {
            guard let waiter = waiters.removeValue(forKey: id) else { return nil }
            if let type = waiter.type {
                waitingByType[type]?.remove(id)
                if waitingByType[type]?.isEmpty == true { waitingByType[type] = nil }
            } else {
                waitingForAny.remove(id)
            }
            return waiter.continuation
        }

        /// Removes and returns every waiter, or with `types` those of these types and of every type.
        mutating func takeWaiters(types: Set<String>?) -> [CheckedContinuation<Wake, Never>] {
            guard let types else {
                defer {
                    waiters = [:]
                    waitingByType = [:]
                    waitingForAny = []
                }
                return waiters.values.map(\.continuation)
            }
            var ids = waitingForAny
            for type in types { ids.formUnion(waitingByType[type] ?? []) }
            return ids.compactMap { removeWaiter($0) }
        }
        var subscribers: Set<Int> = []
        /// Places held per holder, and the anonymous ones in all.
        var held: [Holder: Int] = [:]
        var anonymous = 0
        var nextID = 0
        var refreshing = false
        var refreshAgain = false
        /// The running (or last) refresh, which shutdown waits for before the storage closes.
        var refresher: Task<Void, Never>?
        var closed = false
        /// The listener loop waiting for subscribers to come (`present` true) or all to go.
        var presenceWaiter: (present: Bool, continuation: CheckedContinuation<Bool, Never>)?

        /// The presence waiter to resume (with `true`) now that `subscribers` changed, if it waits for this.
        mutating func presenceReached() -> CheckedContinuation<Bool, Never>? {
            guard let waiter = presenceWaiter, waiter.present != subscribers.isEmpty else { return nil }
            presenceWaiter = nil
            return waiter.continuation
        }
    }

    let storage: any ChangeFeedStorage
    let configuration: ChangeFeedConfiguration
    let logger: Logger
    private let state = Mutex(State())
    static let readLimit = 256
    /// The most record bytes the buffer holds, however few changes that is.
    static let maxBufferBytes = 16 << 20

    /// Follows the number of subscribers (`outpost_live_subscribers`).
    let subscribersGauge: Meter?

    init(
        storage: any ChangeFeedStorage, configuration: ChangeFeedConfiguration, logger: Logger,
        subscribers: Meter? = nil
    ) {
        self.storage = storage
        self.configuration = configuration
        self.logger = logger
        self.subscribersGauge = subscribers
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }
    /// Subscribers suspended in ``wait(_:seen:type:)`` now.
    var waitingCount: Int { state.withLock { $0.waiters.count } }
    /// Whether the feed knows the latest position (its first read after the first subscriber came).
    var isPrimed: Bool { state.withLock { $0.primed } }

    /// Takes a place, or throws 503 `too_many_subscribers` when ``ChangeFeedConfiguration/maxSubscribers``
    /// are taken (or, for an anonymous `holder`, ``ChangeFeedConfiguration/maxAnonymousSubscribers``),
    /// and 429 `too_many_streams` when `holder` holds its own limit.
    func join(_ holder: Holder? = nil) throws -> Ticket {
        enum Refusal: Error { case full, anonymousFull, holderFull(Int) }
        let (outcome, first, listener): (Result<Ticket, Refusal>, Bool, CheckedContinuation<Bool, Never>?) =
            state.withLock { state in
                guard !state.closed, state.subscribers.count < configuration.maxSubscribers else {
                    return (.failure(.full), false, nil)
                }
                if let holder {
                    let limit =
                        holder.isAnonymous ? configuration.maxStreamsPerAddress : configuration.maxStreamsPerUser
                    if holder.isAnonymous, state.anonymous >= configuration.maxAnonymousSubscribers {
                        return (.failure(.anonymousFull), false, nil)
                    }
                    guard state.held[holder, default: 0] < limit else { return (.failure(.holderFull(limit)), false, nil) }
                    state.held[holder, default: 0] += 1
                    if holder.isAnonymous { state.anonymous += 1 }
                }
                state.nextID += 1
                state.subscribers.insert(state.nextID)
                return (
                    .success(Ticket(id: state.nextID, holder: holder)), state.subscribers.count == 1,
                    state.presenceReached()
                )
            }
        listener?.resume(returning: true)
        switch outcome {
        case .success(let ticket):
            subscribersGauge?.increment()
            // Nobody listened until now, so the buffer may lag: catch it up.
            if first { changesCommitted() }
            return ticket
        case .failure(.full):
            throw ServerError(
                .serviceUnavailable, code: "too_many_subscribers",
                message:
                    "This server already streams changes to \(configuration.maxSubscribers) subscribers; retry later or connect to another instance",
                headers: [.retryAfter: "5"])
        case .failure(.anonymousFull):
            throw ServerError(
                .serviceUnavailable, code: "too_many_subscribers",
                message:
                    "This server already streams changes to \(configuration.maxAnonymousSubscribers) callers without a token; sign in, or retry later",
                headers: [.retryAfter: "5"])
        case .failure(.holderFull(let limit)):
            throw ServerError(
                .tooManyRequests, code: "too_many_streams",
                message:
                    "You already hold \(limit) change streams on this server; close one (one stream can follow a type with a filter) before opening another",
                headers: [.retryAfter: "5"])
        }
    }

    func leave(_ ticket: Ticket) {
        let (waiter, listener, left) = state.withLock { state in
            let removed = state.subscribers.remove(ticket.id) != nil
            if removed, let holder = ticket.holder {
                let left = state.held[holder, default: 1] - 1
                state.held[holder] = left > 0 ? left : nil
                if holder.isAnonymous { state.anonymous -= 1 }
            }
            return (state.removeWaiter(ticket.id), state.presenceReached(), removed)
        }
        if left { subscribersGauge?.decrement() }
        waiter?.resume(returning: .closed)
        listener?.resume(returning: true)
    }

    var seen: Seen { state.withLock { Seen(generation: $0.generation, beats: $0.beats) } }

    /// Suspends until something newer than `seen` happened: new changes (of `type`, when given: a
    /// write wakes only the subscribers of its type, so its cost does not grow with streams on other
    /// types), a heartbeat, or shutdown (also when the task is cancelled).
    func wait(_ ticket: Ticket, seen: Seen, type: String? = nil) async -> Wake {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Wake, Never>) in
                let now: Wake? = state.withLock { state in
                    if state.closed || Task.isCancelled || !state.subscribers.contains(ticket.id) { return .closed }
                    if state.generation != seen.generation { return .changes }
                    if state.beats != seen.beats { return .heartbeat }
                    state.addWaiter(ticket.id, type: type, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.removeWaiter(ticket.id) }
            waiter?.resume(returning: .closed)
        }
    }

    /// Up to `limit` changes of `type` after `position`, from memory when the buffer reaches back
    /// that far, else from storage; and the position the subscriber may move to (past changes of
    /// other types it has skipped).
    func read(type: String, after position: Int64, limit: Int) async throws -> (changes: [RecordChange], through: Int64) {
        let fromMemory: (changes: [RecordChange], through: Int64)? = state.withLock { state in
            guard state.primed, position >= state.floor else { return nil }
            var found: [RecordChange] = []
            // The buffer is sorted by position: skip what the subscriber has by binary search.
            var low = 0
            var high = state.buffer.count
            while low < high {
                let middle = (low + high) / 2
                if state.buffer[middle].position <= position { low = middle + 1 } else { high = middle }
            }
            for change in state.buffer[low...] where change.record.type == type {
                found.append(change)
                if found.count == limit { return (found, change.position) }
            }
            return (found, max(position, state.head))
        }
        if let fromMemory { return fromMemory }
        let changes = try await storage.changes(type: type, after: position, limit: limit)
        return (changes, changes.last?.position ?? position)
    }

    /// The hook a writer calls after committing a record write: subscribers are woken once the
    /// change is read. Also the hook for a database's own commit notifications (PostgreSQL
    /// `LISTEN`/`NOTIFY`), for writes made through other instances.
    func changesCommitted() {
        state.withLock { state in
            if state.closed || state.subscribers.isEmpty { return }
            if state.refreshing {
                state.refreshAgain = true
                return
            }
            state.refreshing = true
            // Started under the lock, so that `refresher` is always the newest one.
            state.refresher = Task { await self.refreshLoop() }
        }
    }

    /// Reads new changes into the buffer until none are left, then wakes the waiting subscribers.
    /// One runs at a time.
    private func refreshLoop() async {
        while true {
            do {
                try await refresh()
            } catch {
                logger.warning("change feed read failed", metadata: ["error": "\(error)"])
            }
            let again = state.withLock { state -> Bool in
                if state.refreshAgain && !state.closed {
                    state.refreshAgain = false
                    return true
                }
                state.refreshing = false
                return false
            }
            if !again { return }
        }
    }

    private func refresh() async throws {
        if !state.withLock({ $0.primed }) {
            let latest = try await storage.changeBounds().latest
            state.withLock { state in
                guard !state.primed else { return }
                state.head = latest
                state.floor = latest
                state.primed = true
            }
        }
        var types = Set<String>()
        while true {
            let head = state.withLock { $0.head }
            let batch = try await storage.changes(type: nil, after: head, limit: Self.readLimit)
            guard let last = batch.last else { break }
            for change in batch { types.insert(change.record.type) }
            state.withLock { state in
                state.buffer.append(contentsOf: batch)
                state.bufferBytes += batch.reduce(0) { $0 + $1.record.body.utf8.count }
                state.head = last.position
                var excess = max(0, state.buffer.count - max(1, configuration.bufferSize))
                var bytes = state.bufferBytes
                for change in state.buffer[..<excess] { bytes -= change.record.body.utf8.count }
                while bytes > Self.maxBufferBytes, excess < state.buffer.count {
                    bytes -= state.buffer[excess].record.body.utf8.count
                    excess += 1
                }
                if excess > 0 {
                    state.floor = state.buffer[excess - 1].position
                    state.buffer.removeFirst(excess)
                    state.bufferBytes = bytes
                }
            }
            if batch.count < Self.readLimit { break }
        }
        if !types.isEmpty { wakeAll(.changes, types: types) { $0.generation &+= 1 } }
    }

    /// Applies `change` to the state and resumes the waiting subscribers with `wake`: every one, or
    /// with `types`, those that follow one of them (or every type).
    private func wakeAll(_ wake: Wake, types: Set<String>? = nil, _ change: (inout State) -> Void) {
        let waiters = state.withLock { state in
            change(&state)
            return state.takeWaiters(types: types)
        }
        for waiter in waiters { waiter.resume(returning: wake) }
    }

    /// Ends every stream: subscribers wake with ``Wake/closed`` and no one may join.
    func close() {
        wakeAll(.closed) { $0.closed = true }
        let listener = state.withLock { state in
            defer { state.presenceWaiter = nil }
            return state.presenceWaiter?.continuation
        }
        listener?.resume(returning: false)
    }

    /// Heartbeats, the poll for other instances' writes, retention and (with a
    /// ``ChangeNotifyingStorage``) the database's commit notifications, until graceful shutdown.
    package func run() async throws {
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        await self.every(self.configuration.heartbeatInterval) { self.wakeAll(.heartbeat) { $0.beats &+= 1 } }
                    }
                    group.addTask { await self.every(self.configuration.pollInterval) { self.changesCommitted() } }
                    group.addTask { await self.every(self.configuration.pruneInterval) { await self.prune() } }
                    if let notifying = self.storage as? any ChangeNotifyingStorage {
                        // Commits through any instance (PostgreSQL NOTIFY) wake the subscribers at once.
                        group.addTask { await self.listenWhileSubscribed(notifying) }
                    }
                    await group.waitForAll()
                }
            }
        } onGracefulShutdown: {
            self.close()
        }
        // Also when cancelled rather than shut down: no refresh starts after this, and the one
        // running ends before `run()` returns, so the server closes its storage after the last read.
        close()
        await state.withLock { $0.refresher }?.value
    }

    /// Listens for the database's commit notifications only while anyone subscribes.
    ///
    /// A listening connection is woken by every record write of every instance (PostgreSQL sends
    /// each commit's `NOTIFY` to it, and a database process of its own wakes to send it): about a
    /// quarter of a record insert's CPU, the server's and PostgreSQL's together, spent for nobody
    /// while no one streams changes. Listening starts when the first subscriber joins and stops
    /// when the last leaves. Nothing is missed meanwhile: each start reads what committed before
    /// it (``ChangeNotifyingStorage/listenForChanges(_:)`` calls back once listening), as does
    /// each join, and the poll runs while anyone subscribes.
    private func listenWhileSubscribed(_ notifying: any ChangeNotifyingStorage) async {
        while await subscribers(present: true) {
            let listener = Task { await notifying.listenForChanges { self.changesCommitted() } }
            let goOn = await subscribers(present: false)
            listener.cancel()
            await listener.value
            if !goOn { return }
        }
    }

    /// Suspends until the feed has subscribers (`present`) or has none: `false` when the feed
    /// closed or the task was cancelled meanwhile.
    private func subscribers(present: Bool) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { state in
                    if state.closed || Task.isCancelled { return false }
                    if state.subscribers.isEmpty != present { return true }
                    state.presenceWaiter = (present, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.presenceWaiter = nil }
                return state.presenceWaiter?.continuation
            }
            waiter?.resume(returning: false)
        }
    }

    /// Whether the listener loop listens now (for tests): it waits for all subscribers to go.
    var listening: Bool { state.withLock { $0.presenceWaiter?.present == false } }

    /// Runs `body` every `interval` until the feed closes or the task is cancelled.
    private func every(_ interval: Duration, _ body: @Sendable () async -> Void) async {
        while !state.withLock({ $0.closed }) {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            if state.withLock({ $0.closed }) { return }
            await body()
        }
    }

    /// Removes changes older than the retention window.
    func prune() async {
        let cutoff =
            Int64(Date().timeIntervalSince1970 * 1000) - configuration.retention.inMilliseconds
        do {
            let removed = try await storage.pruneChanges(writtenBefore: cutoff)
            if removed > 0 { logger.debug("change feed pruned", metadata: ["removed": "\(removed)"]) }
        } catch {
            logger.warning("change feed retention failed", metadata: ["error": "\(error)"])
        }
    }
}
