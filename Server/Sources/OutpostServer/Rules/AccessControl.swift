import Foundation
import Logging
import OutpostExpressions
import Synchronization

/// The access rules and users' roles as storage holds them, kept for a moment: the server stays
/// stateless (every instance reads the same tables) without a query per request.
///
/// Rules are read again when the copy is older than ``maxAge`` (one second by default), so a
/// change an operator makes (`outpost rules set`, `--rules` at another instance's start) reaches
/// every instance within about a second; a user's roles are kept as long, per user.
final class AccessControl: Sendable {
    let storage: any RuleStorage
    let maxAge: Duration
    let logger: Logger
    private let clock = ContinuousClock()

    private struct Cached<Value: Sendable>: Sendable {
        var value: Value
        var loadedAt: ContinuousClock.Instant
    }

    private struct KeptRules: Sendable {
        var cached: Cached<AccessRules>?
        /// Grows with every ``forgetRules()``: a read that began before one does not keep its copy.
        var generation = 0
    }

    private let rules = Mutex(KeptRules())
    private let roles = Mutex<[String: Cached<[String]>]>([:])
    /// Users whose roles are kept at once; past it the copies are dropped and read again.
    static let maxCachedUsers = 10_000

    init(storage: any RuleStorage, maxAge: Duration = .seconds(1), logger: Logger) {
        self.storage = storage
        self.maxAge = maxAge
        self.logger = logger
    }

    /// The rules in force, read from storage when the kept copy is older than ``maxAge``.
    func current() async throws -> AccessRules {
        let now = clock.now
        let (kept, generation) = rules.withLock { ($0.cached, $0.generation) }
        if let kept, now - kept.loadedAt < maxAge { return kept.value }
        var invalid: [(rule: StoredRule, error: any Error)] = []
        let loaded = AccessRules(try await storage.rules(), invalid: &invalid)
        for (rule, error) in invalid {
            logger.error(
                "stored access rule does not parse; it denies until it is fixed",
                metadata: ["rule": "\(rule.type).\(rule.operation)", "error": "\(error)"])
        }
        rules.withLock { state in
            if state.generation == generation { state.cached = Cached(value: loaded, loadedAt: now) }
        }
        return loaded
    }

    /// Drops the kept copy of the rules, so the next decision of this instance reads them from
    /// storage: after a change made here (the admin console), not a second later. Other instances
    /// see it within ``maxAge``.
    func forgetRules() {
        rules.withLock { state in
            state.cached = nil
            state.generation += 1
        }
    }

    /// The caller as rules read it, with the signed-in user's roles.
    func caller(_ caller: AuthenticatedCaller?) async throws -> RuleCaller {
        guard let caller else { return .anonymous }
        var roles: [String] = []
        if let user = caller.userID { roles = try await self.roles(of: user) }
        return RuleCaller(
            signedIn: true, user: caller.userID, client: caller.clientID,
            scopes: caller.scope.split(separator: " ").map(String.init), roles: roles)
    }

    func roles(of user: String) async throws -> [String] {
        let now = clock.now
        if let cached = roles.withLock({ $0[user] }), now - cached.loadedAt < maxAge { return cached.value }
        let loaded = try await storage.roles(userID: user)
        roles.withLock { roles in
            if roles.count >= Self.maxCachedUsers { roles.removeAll(keepingCapacity: true) }
            roles[user] = Cached(value: loaded, loadedAt: now)
        }
        return loaded
    }
}
