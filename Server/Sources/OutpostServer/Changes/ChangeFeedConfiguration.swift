/// How `GET /records/{type}/changes` behaves (``ServerConfiguration/changes``).
public struct ChangeFeedConfiguration: Sendable {
    /// Changes older than this are removed; a client resuming from before the oldest kept change
    /// gets 410 `changes_expired` and must reload what it shows. Default: 24 hours.
    public var retention: Duration
    /// Streams open at once; one more is answered 503 `too_many_subscribers` with `Retry-After`.
    /// Default: 10 000.
    public var maxSubscribers: Int
    /// Of ``maxSubscribers``, the most that anonymous streams may hold, so that signed-in users
    /// always find a place however many anonymous streams one or many addresses open. Default: 7 500.
    public var maxAnonymousSubscribers = 7_500
    /// Streams one user (or one client, signed in without a user) may hold on an instance; one more is
    /// 429 `too_many_streams`. Default: 20.
    public var maxStreamsPerUser = 20
    /// Anonymous streams one client address may hold on an instance; one more is 429
    /// `too_many_streams`. Default: 50.
    public var maxStreamsPerAddress = 50
    /// An idle stream gets a comment line this often, so proxies and clients see it is alive (and
    /// a closed connection is noticed). Default: 15 s.
    public var heartbeatInterval: Duration
    /// How often the server looks in the database for changes written by another server instance
    /// sharing it (its own writes wake subscribers at once). Only while someone subscribes. Default: 1 s.
    /// On PostgreSQL, `LISTEN`/`NOTIFY` wakes subscribers at once for every instance's writes, and
    /// this poll is only a second path.
    public var pollInterval: Duration
    /// Recent changes kept in memory, so that one database read serves every subscriber. Default: 4096.
    public var bufferSize: Int
    /// How often retention runs. Default: 1 minute.
    public var pruneInterval: Duration
    /// A stream open this long is ended, at its next heartbeat, with a comment asking the client to
    /// reconnect with `Last-Event-ID` (which loses nothing): behind a load balancer this moves
    /// subscribers onto new instances. Default `nil`: streams stay open until the client or the
    /// server leaves.
    public var maxStreamDuration: Duration? = nil

    public init(
        retention: Duration = .seconds(24 * 3600),
        maxSubscribers: Int = 10_000,
        heartbeatInterval: Duration = .seconds(15),
        pollInterval: Duration = .seconds(1),
        bufferSize: Int = 4096,
        pruneInterval: Duration = .seconds(60)
    ) {
        self.retention = retention
        self.maxSubscribers = maxSubscribers
        self.heartbeatInterval = heartbeatInterval
        self.pollInterval = pollInterval
        self.bufferSize = bufferSize
        self.pruneInterval = pruneInterval
    }
}
