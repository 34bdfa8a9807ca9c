/// OpenID Connect on the reference server: ID tokens, their signing keys and their lifetimes.
///
/// ID tokens are RS256 JWTs signed with a key kept in the database. `outpost keys rotate` makes a
/// new key; the previous one stays in the JWKS for ``signingKeyGracePeriod`` so that tokens signed
/// just before still verify.
public struct OpenIDConfiguration: Sendable {
    /// How long an ID token is valid. Default: 1 hour.
    public var idTokenLifetime: Duration
    /// How long a replaced signing key stays in the JWKS. Default: 24 hours. Keep it longer than
    /// ``idTokenLifetime``.
    public var signingKeyGracePeriod: Duration
    /// Whether a refresh of a token family that began with `openid` returns a new ID token
    /// (OpenID Connect Core §12.2). Default: `true`.
    public var idTokenOnRefresh: Bool

    public init(
        idTokenLifetime: Duration = .seconds(3600), signingKeyGracePeriod: Duration = .seconds(24 * 3600),
        idTokenOnRefresh: Bool = true
    ) {
        self.idTokenLifetime = idTokenLifetime
        self.signingKeyGracePeriod = signingKeyGracePeriod
        self.idTokenOnRefresh = idTokenOnRefresh
    }
}
