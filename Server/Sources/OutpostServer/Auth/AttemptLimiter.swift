import Foundation

/// Counts failed guesses (passwords, client secrets, device user codes) per key in a sliding
/// window, in storage, so that every server instance on one database sees the same counts.
///
/// Only failures count, and an attempt refused for being over the limit is not checked at all and
/// not counted: the wait never grows, and once the window passes the owner can sign in again.
/// Keys are stored as SHA-256 hashes (they hold usernames and addresses). Concurrent guesses may
/// pass the limit by the number in flight; the window still bounds them.
struct AttemptLimiter: Sendable {
    let storage: any AuthStorage
    /// Milliseconds.
    let window: Int64

    /// The seconds to wait when any of `keys` has reached its limit, else `nil`.
    func wait(_ keys: [(key: String, limit: Int)]) async throws -> Int? {
        let now = AuthService.now()
        var wait: Int64?
        for (key, limit) in keys {
            let (count, oldest) = try await storage.failures(key: Secrets.hash(key), since: now - window)
            if count >= limit, let oldest {
                wait = max(wait ?? 0, oldest + window - now)
            }
        }
        guard let wait else { return nil }
        return max(1, Int((wait + 999) / 1000))
    }

    /// Records one failure for each key.
    func fail(_ keys: [String]) async throws {
        let now = AuthService.now()
        for key in keys {
            try await storage.recordFailure(key: Secrets.hash(key), at: now, expiresAt: now + window)
        }
    }

    /// Forgets the failures of `key` (after a success).
    func clear(_ key: String) async throws {
        try await storage.clearFailures(key: Secrets.hash(key))
    }
}
