import Foundation

/// Keeps the process running while a refresh spends a refresh token and stores its successor.
///
/// On Apple platforms `ProcessInfo.performExpiringActivity(withReason:using:)` asks the system not
/// to suspend the app (or its extension) until the work ends. Its block runs on a queue of the
/// system's and must not return before the work is done, so it waits on a semaphore that the work
/// signals; when the system ends the activity early (the block is called again with `expired`), the
/// first call is let go at once. Nothing is locked meanwhile: a refresh that is suspended anyway
/// leaves only its ``RefreshLease``, which expires. Elsewhere it just runs the work.
enum ExpiringActivity {
    static func run<T: Sendable>(reason: String, _ work: @Sendable () async throws -> T) async throws -> T {
        #if canImport(Darwin)
            let finished = DispatchSemaphore(value: 0)
            ProcessInfo.processInfo.performExpiringActivity(withReason: reason) { expired in
                if expired {
                    finished.signal()
                } else {
                    finished.wait()
                }
            }
            defer { finished.signal() }
            return try await work()
        #else
            return try await work()
        #endif
    }
}
