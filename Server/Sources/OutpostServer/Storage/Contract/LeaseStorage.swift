/// Named leases with a small state, shared by every server instance on one database: after hooks
/// keep their place in the change feed in one, scheduled jobs their last run. Whoever holds a
/// lease is the only instance doing that work until the lease expires or is renewed.
///
/// Times are milliseconds since 1970 from the instances' clocks, which must agree to well within a
/// lease's length.
public protocol LeaseStorage: Sendable {
    /// Takes the lease `name` for `holder` when nobody holds it, when its holder's time ran out
    /// (`expires_at <= now`), or when `holder` holds it already (a renewal).
    ///
    /// - Parameters:
    ///   - name: the lease, such as `after:send-receipt` or `job:nightly-report`.
    ///   - holder: who takes it (one id per server instance).
    ///   - now: the time to compare the current holder's expiry with.
    ///   - expiresAt: when the lease ends unless it is renewed.
    ///   - initialState: the state of a lease taken for the first time.
    /// - Returns: the lease's state when `holder` now holds it; `nil` when another holder does.
    func acquireLease(_ name: String, holder: String, now: Int64, expiresAt: Int64, initialState: String) async throws
        -> String?
    /// Stores `state` and renews the lease until `expiresAt`, when `holder` still holds it.
    ///
    /// - Parameters:
    ///   - name: the lease.
    ///   - holder: who claims to hold it.
    ///   - state: the state to keep, such as a change feed position.
    ///   - expiresAt: the new end of the lease.
    /// - Returns: whether `holder` held it (nothing changes when it did not).
    func updateLease(_ name: String, holder: String, state: String, expiresAt: Int64) async throws -> Bool
    /// Lets the lease go at once, when `holder` holds it, keeping its state.
    ///
    /// - Parameters:
    ///   - name: the lease.
    ///   - holder: who lets it go; another holder's lease is left alone.
    func releaseLease(_ name: String, holder: String) async throws
}
