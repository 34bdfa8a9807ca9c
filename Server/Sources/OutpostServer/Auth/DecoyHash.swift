import HummingbirdBcrypt
import NIOPosix
import Synchronization

/// A Bcrypt hash of a random password, checked in place of a user's hash when the username does not
/// exist, so that a failed sign-in takes as long either way and tells nothing.
///
/// Computed on first use rather than at start-up, where it was most of the time to listen. Every
/// password check awaits it, for a known user too, so the first sign-in of either kind waits for
/// the same hash and the two still take equal time. Concurrent first uses share one computation.
final class DecoyHash: Sendable {
    private let cost: UInt8
    private let pool: NIOThreadPool
    private let computation = Mutex<Task<String, any Error>?>(nil)

    init(cost: UInt8, pool: NIOThreadPool) {
        self.cost = cost
        self.pool = pool
    }

    /// Whether the hash has been asked for (for tests: start-up must not compute it).
    var isStarted: Bool { computation.withLock { $0 != nil } }

    /// The hash, computing it on Bcrypt's threads the first time.
    func value() async throws -> String {
        let task = computation.withLock { task in
            if let task { return task }
            let cost = self.cost
            let pool = self.pool
            let started = Task { try await pool.runIfActive { Bcrypt.hash(Secrets.token(prefix: ""), cost: cost) } }
            task = started
            return started
        }
        return try await task.value
    }
}
