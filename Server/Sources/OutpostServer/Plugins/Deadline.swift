@_spi(OutpostInternal) import OutpostSupport

/// Runs `body` with a time limit, without waiting for a body that ignores cancellation: when the
/// limit passes, the caller gets `onTimeout()` at once and the body is cancelled in the background.
///
/// The race itself is `withTimeLimit` (OutpostSupport), shared with the client's plugin hooks.
func withDeadline<T: Sendable>(
    _ limit: Duration, onTimeout: @escaping @Sendable () -> any Error, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    switch await withTimeLimit(limit, body) {
    case .value(let value): return value
    case .error(let error): throw error
    case .timedOut: throw onTimeout()
    }
}
