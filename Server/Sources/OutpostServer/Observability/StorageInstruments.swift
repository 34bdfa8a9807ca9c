import CoreMetrics
import Instrumentation
import Synchronization
import Tracing

/// What a storage operation is, the label of its timer and the name of its span: the seam is the
/// way a statement runs, never its SQL text, so labels stay few.
enum StorageOperation: String, CaseIterable, Sendable {
    /// A bounded read (a key lookup, a keyset page) run in place on a free read-only connection (SQLite).
    case readInPlace = "read_in_place"
    /// A statement on a read-only connection (SQLite).
    case read
    /// A single statement outside a transaction (SQLite's main connection; any PostgreSQL statement).
    case statement
    /// A whole transaction, from `BEGIN` to `COMMIT` or `ROLLBACK`.
    case transaction
}

/// The backend label of storage metrics.
enum StorageBackend: String, Sendable {
    case sqlite, postgres
}

/// Times storage operations, counts lock retries, and, inside a traced request, makes a span per
/// operation. Made by ``ServerInstruments``; a storage holds it in its ``StorageInstrumentsSlot``.
final class StorageInstruments: Sendable {
    let tracer: (any Tracer)?
    private let timers: [StorageBackend: [StorageOperation: Timer]]
    private let busyRetries: [StorageBackend: Counter]

    init(factory: any MetricsFactory, tracer: (any Tracer)?) {
        self.tracer = tracer
        var timers: [StorageBackend: [StorageOperation: Timer]] = [:]
        var retries: [StorageBackend: Counter] = [:]
        for backend in [StorageBackend.sqlite, .postgres] {
            for operation in StorageOperation.allCases {
                timers[backend, default: [:]][operation] = Timer(
                    label: MetricName.storageDuration,
                    dimensions: [("backend", backend.rawValue), ("operation", operation.rawValue)], factory: factory)
            }
            retries[backend] = Counter(
                label: MetricName.storageBusyRetries, dimensions: [("backend", backend.rawValue)], factory: factory)
        }
        self.timers = timers
        self.busyRetries = retries
    }

    /// Runs `body`, timing it; within a request's span (a current `InstrumentationContext`), in a span of its own.
    func measure<T>(
        _ backend: StorageBackend, _ operation: StorageOperation, _ body: () async throws -> T
    ) async throws -> T {
        let started = ContinuousClock.now
        defer { timers[backend]?[operation]?.recordInterval(since: started) }
        guard let tracer, let parent = InstrumentationContext.current else { return try await body() }
        let span = startSpan(tracer, backend, operation, parent: parent)
        defer { span.end() }
        do {
            return try await InstrumentationContext.$current.withValue(span.context) { try await body() }
        } catch {
            span.recordError(error)
            throw error
        }
    }

    /// ``measure(_:_:_:)`` for work that does not suspend (a read in place).
    func measureInPlace<T>(_ backend: StorageBackend, _ operation: StorageOperation, _ body: () throws -> T) rethrows -> T {
        let started = ContinuousClock.now
        defer { timers[backend]?[operation]?.recordInterval(since: started) }
        guard let tracer, let parent = InstrumentationContext.current else { return try body() }
        let span = startSpan(tracer, backend, operation, parent: parent)
        defer { span.end() }
        do {
            return try body()
        } catch {
            span.recordError(error)
            throw error
        }
    }

    private func startSpan(
        _ tracer: any Tracer, _ backend: StorageBackend, _ operation: StorageOperation, parent: InstrumentationContext
    ) -> any Span {
        let span = tracer.startSpan("storage \(operation.rawValue)", context: parent, ofKind: .client)
        span.attributes["db.system.name"] = backend.rawValue
        span.attributes["outpost.storage.operation"] = operation.rawValue
        return span
    }

    func busyRetry(_ backend: StorageBackend) {
        busyRetries[backend]?.increment()
    }
}

extension Timer {
    /// Records the time since `start` on the continuous clock.
    func recordInterval(since start: ContinuousClock.Instant) {
        let elapsed = (ContinuousClock.now - start).components
        recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}

/// Where a storage keeps the instruments a server gives it after opening it
/// (``StorageInstrumentsSlot/install(_:)``); empty, storage operations are not measured.
final class StorageInstrumentsSlot: Sendable {
    private let current = Mutex<StorageInstruments?>(nil)

    var instruments: StorageInstruments? { current.withLock { $0 } }

    func install(_ instruments: StorageInstruments) { current.withLock { $0 = instruments } }
}

/// A storage that can time its operations: SQLite and PostgreSQL.
protocol InstrumentedStorage {
    var instrumentsSlot: StorageInstrumentsSlot { get }
}
