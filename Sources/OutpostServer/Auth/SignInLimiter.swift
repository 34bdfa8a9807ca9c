import Foundation

/// Counts sign-in attempts per account and per client address in a sliding window.
actor SignInLimiter {
    private var attempts: [String: [ContinuousClock.Instant]] = [:]
    private let window: Duration
    private let perAccount: Int
    private let perAddress: Int
    private let clock = ContinuousClock()

    init(window: Duration, perAccount: Int, perAddress: Int) {
        self.window = window
        self.perAccount = perAccount
        self.perAddress = perAddress
    }

    /// Records an attempt; returns the seconds to wait when either limit is already reached.
    func attempt(account: String?, address: String) -> Int? {
        let now = clock.now
        var keys = [("address:" + address, perAddress)]
        if let account { keys.append(("account:" + account.lowercased(), perAccount)) }
        var wait: Duration?
        for (key, limit) in keys {
            var list = (attempts[key] ?? []).filter { now - $0 < window }
            if list.count >= limit, let oldest = list.first {
                let remaining = window - (now - oldest)
                wait = max(wait ?? .zero, remaining)
            }
            list.append(now)
            attempts[key] = list
        }
        if attempts.count > 100_000 { attempts = attempts.filter { !$0.value.isEmpty && now - ($0.value.last ?? now) < window } }
        guard let wait else { return nil }
        return max(1, Int(wait.components.seconds) + 1)
    }
}
