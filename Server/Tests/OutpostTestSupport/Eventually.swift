/// Checks `condition` until it holds or `limit` has passed, pausing `interval` between checks, and
/// returns whether it held: the one polling loop of the tests, for states nothing announces (a
/// count another process keeps, a buffer the kernel fills). Where an event exists, await it instead.
///
/// ```swift
/// let held = try await eventually(within: .seconds(20)) { meter.peakUnsentBytes > 0 }
/// try #require(held, "the server never had to hold bytes back")
/// ```
public func eventually(
    within limit: Duration, every interval: Duration = .milliseconds(5),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: interval)
    }
}

/// Checks `value` until it returns a value or `limit` has passed, and returns the first value, or
/// `nil` when none came in time (see ``eventually(within:every:_:)``).
public func eventually<Value>(
    within limit: Duration, every interval: Duration = .milliseconds(5),
    _ value: () async throws -> Value?
) async throws -> Value? {
    let deadline = ContinuousClock.now + limit
    while true {
        if let value = try await value() { return value }
        guard ContinuousClock.now < deadline else { return nil }
        try await Task.sleep(for: interval)
    }
}
