public import Foundation
import HTTPTypes
public import Logging
import Synchronization

/// A durable queue of writes: each one is written to a journal on disk before it is sent, and sent
/// again after a crash, a kill or a lost connection until the server has it, exactly once.
///
/// ```swift
/// let outbox = try await Outbox.open(.init(fileURL: folder.appending(path: "outbox.journal")), client: client)
/// try await outbox.enqueue(.post("/records/notes", json: ["text": "written offline"]))
/// try await store.enqueuePatch(&note, in: outbox)
/// let replaying = Task { await outbox.run() }        // sends now, and again whenever the server is back
/// for await event in outbox.events() { ... }          // pending counts, completions, failures
/// ```
///
/// Every entry carries an `Idempotency-Key` fixed when it is queued, so a POST whose reply was lost
/// is not applied twice; conditional writes (`If-Match`) that find their own result on the server
/// count as done rather than as conflicts. Writes to one record go out one after another; writes to
/// different records may go out side by side. See <doc:DurableOutbox>.
///
/// The journal's file work (appends flushed to disk, compaction) runs on the outbox's own dispatch
/// queue, never on the Swift concurrency pool. One `Outbox` per journal in a process; several
/// processes (an app and its extensions, in an App Group container) may share one journal: each
/// read or write takes the journal's file lock, reads what the others wrote, and lets the lock go
/// at once, so no lock is held while the app is suspended.
public final class Outbox: Sendable {
    /// Where the journal lives and how the outbox sends.
    public struct Configuration: Sendable {
        /// The journal file. Its folder is created (0700) when missing; the file is owner-only (0600).
        public var fileURL: URL
        /// The largest the journal may grow. ``Outbox/enqueue(_:recordKey:label:)`` beyond it throws
        /// ``OutpostError/Code/outboxFull``.
        public var maxBytes: Int
        /// Writes to different records sent at the same time.
        public var maxConcurrentWrites: Int
        /// Backoff between tries after failures another try may cure (no connection, 5xx, 429):
        /// ``RetryPolicy/maxAttempts`` tries per replay, then the write waits for the next replay.
        public var retry: RetryPolicy
        /// Check the server's copy after a 412 and count the write as done when it already shows it.
        public var reconcilesConflicts: Bool
        public var logger: Logger
        /// Called after a response arrives and before it is recorded in the journal (tests use it to
        /// kill the process in that window).
        @_spi(OutpostInternal) public var afterResponse: (@Sendable (OutboxEntry, Int) async -> Void)?

        public init(
            fileURL: URL,
            maxBytes: Int = 8 << 20,
            maxConcurrentWrites: Int = 4,
            retry: RetryPolicy = RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(250), maxDelay: .seconds(30)),
            reconcilesConflicts: Bool = true,
            logger: Logger = Logger(label: "outpost.outbox", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            self.fileURL = fileURL
            self.maxBytes = maxBytes
            self.maxConcurrentWrites = max(1, maxConcurrentWrites)
            self.retry = retry
            self.reconcilesConflicts = reconcilesConflicts
            self.logger = logger
        }

        /// `outbox.journal` in the application's folder of ``ConfigurationFolder/Location/standard``:
        /// Application Support on Apple platforms, `$XDG_CONFIG_HOME/<application>` (or
        /// `~/.config/<application>`) elsewhere.
        public static func defaultFileURL(application: String) -> URL {
            ConfigurationFolder.standardURL(application: application).appending(path: "outbox.journal")
        }
    }

    public let configuration: Configuration
    /// Sends the queued writes, through its middlewares (credentials are added there, never stored).
    public let client: OutpostClient
    /// The unreadable journal tail found when the outbox opened, if any.
    public let corruption: OutboxCorruption?

    /// The journal and the entries; touched only on `queue`.
    let state: Mutex<JournalState>
    private let queue: DispatchQueue
    private let observers = Mutex<[UUID: AsyncStream<OutboxEvent>.Continuation]>([:])
    /// The last pending count sent to observers; `nil` once closed. Read by ``events()`` without
    /// waiting for the journal (which may be in an `fsync`).
    private let lastPending: Mutex<Int?>
    private let wakeups = Mutex<[UUID: AsyncStream<Void>.Continuation]>([:])

    private init(
        configuration: Configuration, client: OutpostClient, state: consuming sending JournalState, queue: DispatchQueue,
        corruption: OutboxCorruption?
    ) {
        self.configuration = configuration
        self.client = client
        self.lastPending = Mutex(state.pendingCount)
        self.state = Mutex(state)
        self.queue = queue
        self.corruption = corruption
    }

    /// Opens the journal at ``Configuration/fileURL`` (creating it when missing) and reads the writes
    /// still queued in it. An unreadable tail is set aside in a `.corrupt` file beside the journal,
    /// logged at `error`, kept in ``corruption`` and sent to every observer of ``events()``.
    ///
    /// - Throws: ``OutpostError/Code/outboxUnavailable`` when the file cannot be opened, or this
    ///   process has it open already.
    public static func open(_ configuration: Configuration, client: OutpostClient) async throws -> Outbox {
        let queue = DispatchQueue(label: "outpost.outbox.journal")
        let outbox = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Outbox, any Error>) in
            queue.async {
                continuation.resume(
                    with: Result {
                        let (state, corruption) = try JournalState.load(configuration.fileURL)
                        return Outbox(
                            configuration: configuration, client: client, state: state, queue: queue, corruption: corruption)
                    })
            }
        }
        if let corruption = outbox.corruption { configuration.logger.error("Outbox journal damaged: \(corruption)") }
        return outbox
    }

    /// Releases the journal and ends every ``events()`` sequence. Writes in flight
    /// finish, but their results are no longer recorded: they are sent again after the next open,
    /// and the server's idempotency makes that harmless.
    public func close() async {
        _ = try? await journal { state in state.file = nil }
        lastPending.withLock { $0 = nil }
        for continuation in observers.withLock({ $0.values }) { continuation.finish() }
        for continuation in wakeups.withLock({ $0.values }) { continuation.finish() }
    }

    // MARK: Queueing

    /// Writes `request` to the journal (durably: the call returns after `fsync`) and returns the
    /// entry. It is sent by ``replay()`` or ``run()``.
    ///
    /// - Parameters:
    ///   - request: The write, as it would be sent; its `Idempotency-Key` is kept when it has one.
    ///   - recordKey: Writes with the same key go out one after another, in queue order. By default
    ///     a POST is independent of everything else and any other method is keyed by its path.
    ///   - label: What the write is, for people (default: method and path).
    /// - Throws: ``OutpostError/Code/outboxFull`` when the journal would grow past
    ///   ``Configuration/maxBytes``; ``OutpostError/Code/encodingFailed`` when the body cannot be encoded.
    @discardableResult
    public func enqueue(_ request: Request, recordKey: String? = nil, label: String? = nil) async throws -> OutboxEntry {
        var body: Data?
        var contentType: String?
        if let requestBody = request.body {
            let (data, type) = try client.encode(requestBody, method: request.method.rawValue, path: request.path)
            body = data
            contentType = type
        }
        let key = request.headers[.idempotencyKey] ?? UUID().uuidString
        let skipped = OutboxEntry.secretHeaders.union(["idempotency-key", "if-match", "content-type"])
        let headers = request.headers.filter { !skipped.contains($0.name.canonicalName) }.map {
            OutboxEntry.Header(name: $0.name.rawName, value: $0.value)
        }
        let path = OutpostError.normalizedPath(request.path)
        let method = request.method.rawValue
        let draft = OutboxEntry(
            id: UUID(), sequence: 0, label: label ?? "\(method) \(path)", method: method, path: request.path,
            query: request.query.map { OutboxEntry.QueryItem(name: $0.name, value: $0.value) }, headers: headers, body: body,
            contentType: contentType, idempotencyKey: key,
            recordKey: recordKey ?? (request.method == .post ? "POST \(path) \(key)" : path),
            ifMatch: request.headers[.ifMatch], enqueuedAt: Date(), state: .pending)
        let maxBytes = configuration.maxBytes
        let (entry, pending) = try await withCheckedThrowingContinuation { (waiter: JournalState.Waiter) in
            queue.async {
                do {
                    let flushDue = try self.state.withLock { journal in
                        try journal.locked { state in
                            try state.stage(draft, maxBytes: maxBytes, waiter: waiter)
                            defer { state.flushScheduled = true }
                            return !state.flushScheduled
                        }
                    }
                    // Writes staged before this flush runs share its fsync.
                    if flushDue { self.queue.async { self.flushStaged() } }
                } catch {
                    waiter.resume(throwing: error)
                }
            }
        }
        configuration.logger.debug("Outbox: queued \(entry.label)", metadata: ["outbox.entry": "\(entry.id)"])
        emit(.pending(pending))
        wake()
        return entry
    }

    /// The queued writes, pending and failed, in queue order.
    public var entries: [OutboxEntry] {
        get async throws { try await journal { $0.entries } }
    }

    /// Removes a write that has not been sent (pending or failed) from the outbox.
    ///
    /// - Throws: ``OutpostError/Code/outboxEntryNotFound`` when no such write is queued, or it is
    ///   being sent at this moment (it may already have reached the server).
    @discardableResult
    public func cancel(_ id: UUID) async throws -> OutboxEntry {
        let (entry, pending) = try await journal { state in
            let entry = try state.remove(id)
            return (entry, state.pendingCount)
        }
        emit(.pending(pending))
        return entry
    }

    /// Puts a failed write back in line (after signing in again, or once the conflict is resolved on
    /// the server), with `ifMatch` as its new `If-Match` when given.
    public func retry(_ id: UUID, ifMatch: String? = nil) async throws {
        let pending = try await journal { state in
            try state.reset(id, ifMatch: ifMatch)
            return state.pendingCount
        }
        emit(.pending(pending))
        wake()
    }

    // MARK: Observing

    /// The outbox's events, from now on: first the corruption found at open (if any) and the pending
    /// count, then every change. Each call gives a sequence of its own; it ends at ``close()``.
    public func events() -> AsyncStream<OutboxEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: OutboxEvent.self, bufferingPolicy: .bufferingNewest(1024))
        let id = UUID()
        if let corruption { continuation.yield(.corruption(corruption)) }
        let pending = lastPending.withLock { $0 }
        if let pending { continuation.yield(.pending(pending)) } else { continuation.finish() }
        observers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.observers.withLock { _ = $0.removeValue(forKey: id) } }
        return stream
    }

    func emit(_ event: OutboxEvent) {
        if case .pending(let count) = event { lastPending.withLock { if $0 != nil { $0 = count } } }
        for continuation in observers.withLock({ $0.values }) { continuation.yield(event) }
    }

    /// A sequence that yields whenever a write is queued or put back in line.
    func wakeupStream() -> (AsyncStream<Void>, UUID) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        wakeups.withLock { $0[id] = continuation }
        return (stream, id)
    }

    func endWakeups(_ id: UUID) {
        wakeups.withLock { $0.removeValue(forKey: id) }?.finish()
    }

    private func wake() {
        for continuation in wakeups.withLock({ $0.values }) { continuation.yield() }
    }

    /// Writes the staged writes (on the queue) and resumes their callers.
    private func flushStaged() {
        let outcome = state.withLock { journal in
            Result { try journal.locked { $0.flushStaged() } }
        }
        switch outcome {
        case .success(let (waiters, result)):
            for (entry, waiter) in waiters { waiter.resume(with: result.map { (entry, $0) }) }
        case .failure(let error):
            // The lock could not be taken: nothing was written; every staged write fails with it.
            let waiters = state.withLock { $0.dropStaged() }
            for (_, waiter) in waiters { waiter.resume(throwing: error) }
        }
    }

    /// Runs `body` on the journal's queue, off the concurrency pool, in this process's turn at the
    /// journal file (after reading what other processes wrote since the last turn).
    func journal<T: Sendable>(_ body: @escaping @Sendable (inout JournalState) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.state.withLock { try $0.locked(body) } })
            }
        }
    }
}
