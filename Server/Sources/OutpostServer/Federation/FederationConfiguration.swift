/// How the server fetches and trusts the keys of upstream OpenID Connect providers
/// (`outpost providers add`) whose ID tokens apps exchange for the server's own tokens, and how it
/// signs people in through their web pages.
public struct FederationConfiguration: Sendable {
    /// How far a token's `exp` may lie in the past and its `iat` in the future, for clocks that
    /// disagree a little. Default: 60 seconds.
    public var leeway: Duration
    /// How long fetched discovery documents and key sets are used before they are fetched again.
    /// Default: 1 hour.
    public var keysMaxAge: Duration
    /// The least time between two fetches of one provider's key set that a token with an unknown
    /// `kid` triggers, so that tokens with made-up key ids cannot make the server hammer the
    /// provider. Default: 60 seconds.
    public var unknownKeyRefetchInterval: Duration
    /// The time a fetch of a discovery document or key set may take. Default: 10 seconds.
    public var fetchTimeout: Duration
    /// The largest discovery document or key set accepted. Default: 256 KiB.
    public var maxDocumentBytes: Int
    /// How long a web sign-in through a provider (its "Continue with" button) may take, from the
    /// button to the provider's answer. Default: 10 minutes.
    public var webSignInLifetime: Duration

    public init(
        leeway: Duration = .seconds(60), keysMaxAge: Duration = .seconds(3600),
        unknownKeyRefetchInterval: Duration = .seconds(60), fetchTimeout: Duration = .seconds(10),
        maxDocumentBytes: Int = 256 * 1024, webSignInLifetime: Duration = .seconds(600)
    ) {
        self.webSignInLifetime = webSignInLifetime
        self.leeway = leeway
        self.keysMaxAge = keysMaxAge
        self.unknownKeyRefetchInterval = unknownKeyRefetchInterval
        self.fetchTimeout = fetchTimeout
        self.maxDocumentBytes = maxDocumentBytes
    }
}
