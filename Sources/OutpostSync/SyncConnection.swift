/// Where a live connection of a ``SyncedStore`` to a change feed stands (``LiveSync/states``).
public enum SyncConnectionState: Sendable, Hashable {
    /// Catching up and opening the change stream.
    case connecting
    /// The stream is open: changes made elsewhere arrive as they happen.
    case live
    /// The connection failed `attempt` times in a row; the next try is in `retryIn`, or sooner
    /// when a ``SyncResumeSignals`` says the network or the app came back. `reason` is the last
    /// error's description, without credentials.
    case waiting(retryIn: Duration, attempt: Int, reason: String)
    /// ``LiveSync/stop()`` was called (or the store went away): no more reconnecting.
    case stopped
}

/// How long a ``LiveSync`` waits between failed connections: exponential, from ``initial`` up to
/// ``maximum``, with "full jitter" (a random wait between half the step and the step) so that many
/// devices coming back at once do not reconnect in step. A connection that stayed live resets it.
public struct SyncBackoff: Sendable, Hashable {
    /// The wait after the first failure.
    public var initial: Duration
    /// The longest wait.
    public var maximum: Duration

    /// A backoff from `initial` to `maximum`.
    ///
    /// - Parameters:
    ///   - initial: the wait after the first failure (default half a second).
    ///   - maximum: the longest wait (default 30 seconds).
    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The wait before attempt `attempt + 1` after `attempt` failures (1 or more).
    func delay(after attempt: Int) -> Duration {
        let step = min(maximum, initial * (1 << min(max(attempt - 1, 0), 20)))
        return step / 2 + step / 2 * Double.random(in: 0...1)
    }
}
