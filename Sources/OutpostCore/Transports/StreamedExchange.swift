public import Foundation
public import HTTPTypes
@_spi(OutpostInternal) import OutpostSupport
import Synchronization

/// One streamed exchange between a transport (the producer: it delivers the response head, then the
/// body in chunks) and the caller (the consumer: it awaits the head, then reads the body).
///
/// Both built-in transports stream through it, so what they share is written once:
/// - **Backpressure.** The body waits in a buffer of at most ``highWatermark`` bytes (plus the chunk
///   that crossed it). When the buffer is that full, ``append(_:)`` says so and the producer stops
///   reading from the network until ``whenDrained(_:)`` runs its action, once the consumer has taken
///   the buffer down to ``lowWatermark``. Memory stays bounded whatever the size of the body and
///   however slow the consumer.
/// - **Timeouts** (``TransportOptions``): the head must arrive within `timeout`; then either the
///   whole exchange ends within `timeout` (no `idleTimeout`) or each silence of the body, while the
///   buffer has room, lasts at most `idleTimeout`. One watchdog task per exchange enforces both.
/// - **Cancellation.** Cancelling the task that waits for the head or reads the body, or dropping
///   the body stream, cancels the exchange: the transport's `onCancel` action stops the request.
@_spi(OutpostInternal) public final class StreamedExchange: Sendable {
    /// Above this many buffered bytes the producer is asked to pause.
    @_spi(OutpostInternal) public let highWatermark: Int
    /// The producer resumes once the buffer is down to this many bytes.
    @_spi(OutpostInternal) public let lowWatermark: Int
    /// Whether bytes past the bound go to a temporary file instead of pausing the producer: for a
    /// producer that cannot pause (FoundationNetworking's URLSession).
    @_spi(OutpostInternal) public let spills: Bool
    private let options: TransportOptions
    private let state: Mutex<State>

    /// 1 MiB: a few network reads ahead of the consumer, enough to keep a fast link busy.
    @_spi(OutpostInternal) public static var defaultHighWatermark: Int { 1 << 20 }

    struct State {
        var head: HTTPResponse?
        var length: Int64?
        var headWaiter: CheckedContinuation<(HTTPResponse, Int64?), any Error>?
        var chunks: [Data] = []
        var firstChunk = 0
        var buffered = 0
        var peakBuffered = 0
        /// Set once the producer ended; `nil` inside means a complete body.
        var end: (any Error)??
        var reader: CheckedContinuation<Data?, any Error>?
        var paused = false
        var drainedActions: [@Sendable () -> Void] = []
        var pauseWatchers: [CheckedContinuation<Void, Never>] = []
        var onCancel: (@Sendable () -> Void)?
        var lastActivity = ContinuousClock.now
        var watchdog: Task<Void, Never>?
        /// The overflow file of a spilling exchange, and the bytes written to it and read back.
        var spill: SpillFile?
        var spillWritten: Int64 = 0
        var spillRead: Int64 = 0
        var peakSpilled: Int64 = 0

        /// Takes the oldest buffered chunk out of the queue. Its slot lets go of the bytes at once:
        /// a queue that a fast producer keeps from ever emptying would otherwise keep every chunk
        /// read since it last emptied (a 1 GiB download held 43 MB of them at once, while only
        /// ``buffered`` bytes were counted). The slots read are dropped once they are half of the
        /// queue, so it stays as long as the chunks it buffers, whatever the length of the body.
        mutating func takeFirstChunk() -> Data? {
            guard firstChunk < chunks.count else { return nil }
            let chunk = chunks[firstChunk]
            chunks[firstChunk] = Data()
            firstChunk += 1
            if firstChunk == chunks.count {
                chunks.removeAll(keepingCapacity: true)
                firstChunk = 0
            } else if firstChunk >= 16, firstChunk * 2 >= chunks.count {
                chunks.removeFirst(firstChunk)
                firstChunk = 0
            }
            return chunk
        }
    }

    @_spi(OutpostInternal) public init(
        options: TransportOptions, highWatermark: Int = StreamedExchange.defaultHighWatermark, spills: Bool = false
    ) {
        self.options = options
        self.spills = spills
        self.highWatermark = max(1, highWatermark)
        self.lowWatermark = max(0, highWatermark / 2)
        self.state = Mutex(State())
    }

    // MARK: Producer

    /// Sets what stops the underlying request (called at most once, outside any lock). When the
    /// exchange is already over, `action` runs at once.
    @_spi(OutpostInternal) public func onCancel(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.end == nil else { return true }
            state.onCancel = action
            return false
        }
        if runNow { action() }
    }

    /// The response head arrived; `length` is the body's length when announced.
    @_spi(OutpostInternal) public func receive(head: HTTPResponse, length: Int64?) {
        let waiter = state.withLock { state -> CheckedContinuation<(HTTPResponse, Int64?), any Error>? in
            guard state.end == nil, state.head == nil else { return nil }
            state.head = head
            state.length = length
            state.lastActivity = .now
            return state.headWaiter.take()
        }
        waiter?.resume(returning: (head, length))
    }

    /// Hands over a chunk of the body. Returns `true` when the buffer is full: the producer should
    /// pause and go on when ``whenDrained(_:)`` runs its action.
    @discardableResult
    @_spi(OutpostInternal) public func append(_ chunk: Data) -> Bool {
        guard !chunk.isEmpty else { return false }
        var watchers: [CheckedContinuation<Void, Never>] = []
        var failure: (any Error)?
        let (reader, full) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, Bool) in
            guard state.end == nil else { return (nil, false) }
            state.lastActivity = .now
            if let reader = state.reader.take() { return (reader, false) }
            if spills, state.spillRead < state.spillWritten || state.buffered + chunk.count > highWatermark {
                // Past the bound, in order after what is already in the file.
                do {
                    if state.spill == nil { state.spill = try SpillFile() }
                    try state.spill?.write(chunk, at: state.spillWritten)
                    state.spillWritten += Int64(chunk.count)
                    state.peakSpilled = max(state.peakSpilled, state.spillWritten - state.spillRead)
                } catch {
                    failure = error
                }
                if !state.paused {
                    state.paused = true
                    watchers = state.pauseWatchers
                    state.pauseWatchers = []
                }
                return (nil, false)
            }
            state.chunks.append(chunk)
            state.buffered += chunk.count
            state.peakBuffered = max(state.peakBuffered, state.buffered)
            // A spilling exchange never asks its producer to pause: it counts as paused once a
            // chunk went to the file.
            if !spills, state.buffered >= highWatermark, !state.paused {
                state.paused = true
                watchers = state.pauseWatchers
                state.pauseWatchers = []
            }
            return (nil, state.paused)
        }
        reader?.resume(returning: chunk)
        for watcher in watchers { watcher.resume() }
        if let failure {
            cancel(
                OutpostError(
                    .transportFailed, "Cannot write the streamed response's overflow to a temporary file",
                    suggestion: "Free disk space in the temporary folder, or use AsyncHTTPClientTransport", underlying: failure))
        }
        return full
    }

    /// Runs `action` once the consumer has made room (at once when there is room already, or when
    /// the exchange is over).
    @_spi(OutpostInternal) public func whenDrained(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.paused, state.end == nil else { return true }
            state.drainedActions.append(action)
            return false
        }
        if runNow { action() }
    }

    /// Suspends until the consumer has made room: for producers that pull (`whenDrained` as `await`).
    @_spi(OutpostInternal) public func drained() async {
        await withCheckedContinuation { continuation in whenDrained { continuation.resume() } }
    }

    /// The producer ended: `error` is `nil` for a complete body, else already what the caller
    /// should see (a transport classifies its errors first).
    @_spi(OutpostInternal) public func finish(_ error: (any Error)?) {
        close(error, cancel: false)
    }

    /// Whether the exchange is over (the producer can stop).
    @_spi(OutpostInternal) public var isOver: Bool { state.withLock { $0.end != nil } }

    // MARK: Consumer

    /// Starts the watchdog, then waits for the head and returns it with the body as a ``ByteStream``.
    @_spi(OutpostInternal) public func open() async throws -> (HTTPResponse, ByteStream) {
        startWatchdog()
        let (head, length) = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let result = state.withLock { state -> Result<(HTTPResponse, Int64?), any Error>? in
                    if let head = state.head { return .success((head, state.length)) }
                    if let end = state.end { return .failure(end ?? OutpostError.connectionLost(underlying: EndOfStream())) }
                    state.headWaiter = continuation
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            self.cancel(OutpostError.transportCancelled(underlying: CancellationError()))
        }
        let reader = Reader(exchange: self)
        return (head, ByteStream(length: length, exchange: self) { try await reader.next() })
    }

    /// The next chunk of the body, `nil` at its end.
    @_spi(OutpostInternal) public func next() async throws -> Data? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                var drained: [@Sendable () -> Void] = []
                let result = state.withLock { state -> Result<Data?, any Error>? in
                    if let chunk = state.takeFirstChunk() {
                        state.buffered -= chunk.count
                        if state.paused, state.buffered <= lowWatermark {
                            state.paused = false
                            state.lastActivity = .now
                            drained = state.drainedActions
                            state.drainedActions = []
                        }
                        return .success(chunk)
                    }
                    if state.spillRead < state.spillWritten, let spill = state.spill {
                        let count = Int(min(Int64(SpillFile.readSize), state.spillWritten - state.spillRead))
                        do {
                            let chunk = try spill.read(count, at: state.spillRead)
                            state.spillRead += Int64(chunk.count)
                            if state.spillRead == state.spillWritten {
                                // All read back: the file is reused from its start.
                                state.spillRead = 0
                                state.spillWritten = 0
                                state.paused = false
                            }
                            return .success(chunk)
                        } catch {
                            return .failure(
                                OutpostError(
                                    .transportFailed, "Cannot read back the streamed response's overflow", underlying: error))
                        }
                    }
                    if let end = state.end { return end.map { .failure($0) } ?? .success(nil) }
                    state.reader = continuation
                    return nil
                }
                for action in drained { action() }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            self.cancel(OutpostError.transportCancelled(underlying: CancellationError()))
        }
    }

    /// Ends the exchange with `error` and stops the request.
    @_spi(OutpostInternal) public func cancel(_ error: any Error) {
        close(error, cancel: true)
    }

    // MARK: Observation (tests and benchmarks)

    /// The bytes waiting in the buffer now.
    @_spi(OutpostInternal) public var bufferedBytes: Int { state.withLock { $0.buffered } }

    /// The most bytes that ever waited in the buffer.
    @_spi(OutpostInternal) public var peakBufferedBytes: Int { state.withLock { $0.peakBuffered } }

    /// The length of the queue of chunks, counting the slots already read that it has not dropped
    /// yet: bounded by the chunks buffered, not by the length of the body.
    @_spi(OutpostInternal) public var queueSlots: Int { state.withLock { $0.chunks.count } }

    /// The most bytes that ever waited in the overflow file (spilling exchanges only).
    @_spi(OutpostInternal) public var peakSpilledBytes: Int64 { state.withLock { $0.peakSpilled } }

    /// Returns once the producer has been asked to pause (the buffer is full; for an exchange that
    /// spills, once a chunk went to the file) or the exchange is over.
    @_spi(OutpostInternal) public func waitUntilPausedOrOver() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.paused || state.end != nil { return true }
                state.pauseWatchers.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    // MARK: Internals

    private func close(_ error: (any Error)?, cancel: Bool) {
        let taken = state.withLock { state -> Closing? in
            guard state.end == nil else { return nil }
            state.end = .some(error)
            // A consumer that stopped early drops what is buffered.
            if cancel {
                state.chunks = []
                state.firstChunk = 0
                state.buffered = 0
            }
            let closing = Closing(
                head: state.headWaiter.take(), reader: state.reader.take(), drained: state.drainedActions,
                watchers: state.pauseWatchers, onCancel: cancel ? state.onCancel : nil, watchdog: state.watchdog)
            state.drainedActions = []
            state.pauseWatchers = []
            state.onCancel = nil
            state.watchdog = nil
            return closing
        }
        guard let taken else { return }
        let failure = error ?? OutpostError.connectionLost(underlying: EndOfStream())
        taken.head?.resume(throwing: failure)
        if let reader = taken.reader {
            if let error { reader.resume(throwing: error) } else { reader.resume(returning: nil) }
        }
        for action in taken.drained { action() }
        for watcher in taken.watchers { watcher.resume() }
        taken.onCancel?()
        taken.watchdog?.cancel()
    }

    private struct Closing {
        var head: CheckedContinuation<(HTTPResponse, Int64?), any Error>?
        var reader: CheckedContinuation<Data?, any Error>?
        var drained: [@Sendable () -> Void]
        var watchers: [CheckedContinuation<Void, Never>]
        var onCancel: (@Sendable () -> Void)?
        var watchdog: Task<Void, Never>?
    }

    /// The body ended before the head (never a complete response).
    struct EndOfStream: Error {}

    /// Enforces the timeouts: see the type's documentation.
    private func startWatchdog() {
        let options = options
        let started = ContinuousClock.now
        let task = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                let (deadline, expired) = self.state.withLock { state -> (ContinuousClock.Instant?, (any Error)?) in
                    guard state.end == nil else { return (nil, nil) }
                    let deadline: ContinuousClock.Instant?
                    if state.head == nil || options.idleTimeout == nil {
                        deadline = started + options.timeout
                    } else if state.paused {
                        deadline = nil  // the consumer is slow, not the server
                    } else {
                        deadline = state.lastActivity + (options.idleTimeout ?? options.timeout)
                    }
                    guard let deadline, deadline <= .now else { return (deadline, nil) }
                    if state.head != nil, let idle = options.idleTimeout {
                        return (nil, OutpostError.streamIdle(idle))
                    }
                    return (nil, OutpostError.transportTimeout(options, underlying: CancellationError()))
                }
                if let expired {
                    self.cancel(expired)
                    return
                }
                // With an idle timeout, looked at least once per idle period (the head may arrive meanwhile).
                let period = options.idleTimeout ?? options.timeout
                let wait = min(deadline.map { $0 - .now } ?? period, period)
                do { try await Task.sleep(for: max(wait, .milliseconds(1))) } catch { return }
            }
        }
        let stale = state.withLock { state -> Bool in
            guard state.end == nil else { return true }
            state.watchdog = task
            return false
        }
        if stale { task.cancel() }
    }
}

/// A temporary file, removed from its folder as soon as it is open, that holds the part of a body
/// past the buffer's bound. Used under the exchange's lock only.
final class SpillFile: Sendable {
    static var readSize: Int { 256 * 1024 }
    private let descriptor: Int32

    init() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("outpost-stream-\(UUID().uuidString)").path
        descriptor = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        unlink(path)
    }

    func write(_ data: Data, at offset: Int64) throws {
        var done = 0
        while done < data.count {
            let written = data.withUnsafeBytes { bytes in
                pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            done += written
        }
    }

    func read(_ count: Int, at offset: Int64) throws -> Data {
        var data = Data(count: count)
        let read = data.withUnsafeMutableBytes { bytes in pread(descriptor, bytes.baseAddress!, count, off_t(offset)) }
        guard read > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        if read < count { data.removeSubrange(read...) }
        return data
    }

    deinit { close(descriptor) }
}

/// What the caller holds while reading a body: once every copy of the body stream is gone, the
/// exchange is cancelled (a consumer that stops iterating closes the connection).
private final class Reader: Sendable {
    let exchange: StreamedExchange

    init(exchange: StreamedExchange) { self.exchange = exchange }

    func next() async throws -> Data? { try await exchange.next() }

    deinit { exchange.cancel(OutpostError.transportCancelled(underlying: CancellationError())) }
}

extension OutpostError {
    /// A streamed body that stayed silent for longer than ``TransportOptions/idleTimeout``.
    @_spi(OutpostInternal) public static func streamIdle(_ idle: Duration) -> OutpostError {
        OutpostError(
            .timeout, "No bytes of the streamed response for \(idle)",
            suggestion: "The server or the network stalled; retry, or raise TransportOptions.idleTimeout",
            underlying: CancellationError())
    }
}
