import Foundation
@_spi(OutpostInternal) import OutpostSupport

/// When and how the client tries a request again.
///
/// Idempotent requests (GET, HEAD, PUT, DELETE, OPTIONS) are retried after a connection failure and
/// after the statuses in ``retryableStatuses``; any other request only when it carries an
/// `Idempotency-Key` header. Delays grow exponentially with jitter, and a `Retry-After` header
/// (seconds or an HTTP date) replaces the computed delay. A `Retry-After` longer than
/// ``maxRetryAfter`` is not waited for: the response goes to the caller.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included. `1` turns retries off.
    public var maxAttempts: Int
    /// The delay before the first retry, before jitter.
    public var baseDelay: Duration
    /// No computed delay is longer than this.
    public var maxDelay: Duration
    /// The longest `Retry-After` the client will wait for.
    public var maxRetryAfter: Duration
    /// Statuses worth another try.
    public var retryableStatuses: Set<Int>
    /// Waits between attempts. A seam for tests; the default is `Task.sleep`.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// A random number in `0..<1` for jitter. A seam for tests.
    public var random: @Sendable () -> Double

    public init(
        maxAttempts: Int = 3,
        baseDelay: Duration = .milliseconds(200),
        maxDelay: Duration = .seconds(5),
        maxRetryAfter: Duration = .seconds(30),
        retryableStatuses: Set<Int> = [429, 502, 503, 504],
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.retryableStatuses = retryableStatuses
        self.sleep = sleep
        self.random = random
    }

    /// No retries at all.
    public static var none: RetryPolicy { RetryPolicy(maxAttempts: 1) }

    /// The delay before attempt `attempt + 1`: exponential, capped, with "equal jitter"
    /// (half fixed, half random), so that many clients do not retry in step.
    public func backoff(afterAttempt attempt: Int) -> Duration {
        let exponent = Double(1 << min(max(attempt - 1, 0), 20))
        let capped = min(baseDelay.inSeconds * exponent, maxDelay.inSeconds)
        return .seconds(capped * (0.5 + 0.5 * random()))
    }
}

extension RetryPolicy {
    /// Parses a `Retry-After` value: delay-seconds or an HTTP date (RFC 9110, section 10.2.3).
    static func parseRetryAfter(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(now)))
    }
}
