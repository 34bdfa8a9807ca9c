import Foundation

/// Checks that Swift's cooperative pool still runs tasks while other tasks wait on something that
/// blocks (a file lock, a slow disk).
///
/// A thread outside the pool waits for ``probe()``; if the probe's task cannot run within the time
/// given, the watchdog calls `onStall` (which should unblock the waiters, so that the test fails
/// instead of hanging) and the probe reports the stall.
package final class PoolWatchdog: Sendable {
    private let progressed = DispatchSemaphore(value: 0)
    private let stalled = Flag()

    package init(seconds: Int = 20, onStall: @escaping @Sendable () -> Void) {
        let progressed = progressed
        let stalled = stalled
        Thread {
            if progressed.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
                stalled.set()
                onStall()
            }
        }.start()
    }

    /// Runs a task on the cooperative pool; `true` when it ran before the watchdog gave up.
    package func probe() async -> Bool {
        await Task { _ = progressed.signal() }.value
        return !stalled.isSet
    }

    /// Starts `count` tasks running `body`, and returns them once each has begun.
    package static func start(
        _ count: Int, _ body: @escaping @Sendable (Int) async throws -> Void
    ) async -> [Task<Void, any Error>] {
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let tasks = (0..<count).map { index in
            Task {
                start.yield()
                try await body(index)
            }
        }
        var begun = 0
        for await _ in started {
            begun += 1
            if begun == count { break }
        }
        return tasks
    }
}
