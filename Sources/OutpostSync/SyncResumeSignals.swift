import Synchronization

/// Moments worth reconnecting at once instead of waiting out a backoff: the network path became
/// usable, the app returned to the foreground.
///
/// ``PlatformResumeSignals`` watches the system on Apple platforms; ``ManualResumeSignals`` lets
/// an app (or a test) say it.
public protocol SyncResumeSignals: Sendable {
    /// A sequence that yields each time reconnecting now is worth a try. It ends when the
    /// consumer stops iterating.
    func resumptions() -> AsyncStream<Void>
}

/// Resumption an app triggers itself, with ``resume()``: e.g. from its own reachability or
/// scene-phase code, or in tests.
public final class ManualResumeSignals: SyncResumeSignals {
    private let listeners = Mutex<[Int: AsyncStream<Void>.Continuation]>([:])
    private let nextListener = Atomic<Int>(0)

    /// Signals that nothing has happened yet.
    public init() {}

    /// Tells every follower to reconnect now if it is waiting.
    public func resume() {
        for listener in listeners.withLock({ Array($0.values) }) { listener.yield() }
    }

    /// A sequence of the calls to ``resume()`` made while it is iterated.
    public func resumptions() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let key = nextListener.add(1, ordering: .relaxed).newValue
        listeners.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.removeValue(forKey: key) } }
        return stream
    }
}
