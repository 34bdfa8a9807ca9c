import Foundation

/// Counts failed guesses (passwords, client secrets, device user codes) per key in a sliding
/// window, in storage, so that every server instance on one database sees the same counts.
///
/// A guess is counted before it is checked (``attempt(_:)``), atomically with the count in storage,
/// and given back when it was right: so concurrent guesses never check more than the limit, on one
/// instance or many. An attempt refused for being over the limit is not checked at all and not
/// counted: the wait never grows, and once the window passes the owner can sign in again.
/// Keys are stored as SHA-256 hashes (they hold usernames and addresses).
struct AttemptLimiter: Sendable {
    /// A guess counted against its keys before it is checked.
    struct Attempt: Sendable {
        let limiter: AttemptLimiter
        let at: Int64

        /// The guess was right: it no longer counts against `key`.
        func release(_ key: String) async throws {
            try await limiter.storage.releaseAttempt(key: Secrets.hash(key), at: at)
        }
    }

    enum Admission: Sendable {
        /// Counted: check the guess; a wrong one keeps the count.
        case admitted(Attempt)
        /// A key is at its limit: wait this many seconds. Nothing was counted.
        case wait(seconds: Int)
    }

    /// Counts a guess against each of `keys`, unless one of them is at its limit.
    func attempt(_ keys: [(key: String, limit: Int)]) async throws -> Admission {
        let now = AuthService.now()
        let hashed = keys.map { (key: Secrets.hash($0.key), limit: $0.limit) }
        if let oldest = try await storage.reserveAttempt(hashed, at: now, since: now - window, expiresAt: now + window) {
            return .wait(seconds: max(1, Int((oldest + window - now + 999) / 1000)))
        }
        return .admitted(Attempt(limiter: self, at: now))
    }

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
