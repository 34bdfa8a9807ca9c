import Foundation

/// Runs blocking calls (file I/O) on a serial dispatch queue of their own, so they never hold a
/// thread of Swift's cooperative pool.
package final class BlockingIO: Sendable {
    private let queue: DispatchQueue

    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the queue and returns its result.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the queue without waiting for it.
    package func start(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Returns once everything queued before it has run.
    package func drain() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }
}
