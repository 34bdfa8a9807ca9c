/// How the server runs plugins' after hooks and scheduled jobs.
public struct BackgroundWorkConfiguration: Sendable {
    /// How often an after hook looks for new changes when it has none. Default: 1 second.
    public var pollInterval: Duration
    /// How long an instance holds an after hook's or a job's lease before another may take it over;
    /// it is renewed every third of it while the work runs. Default: 30 seconds.
    public var leaseDuration: Duration
    /// The wait before a failed after hook runs again, doubled each time up to ``maxRetryDelay``.
    /// Default: 1 second.
    public var retryDelay: Duration
    /// Default: 1 minute.
    public var maxRetryDelay: Duration

    /// - Parameters:
    ///   - pollInterval: how often an idle after hook looks for new changes.
    ///   - leaseDuration: how long a lease lasts without renewal.
    ///   - retryDelay: the first wait before a failed after hook runs again.
    ///   - maxRetryDelay: the longest such wait.
    public init(
        pollInterval: Duration = .seconds(1), leaseDuration: Duration = .seconds(30), retryDelay: Duration = .seconds(1),
        maxRetryDelay: Duration = .seconds(60)
    ) {
        self.pollInterval = pollInterval
        self.leaseDuration = leaseDuration
        self.retryDelay = retryDelay
        self.maxRetryDelay = maxRetryDelay
    }
}
