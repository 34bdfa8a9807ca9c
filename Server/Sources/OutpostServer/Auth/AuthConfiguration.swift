/// How the server signs people in and issues tokens.
///
/// Access tokens are opaque random strings (32 bytes, base64url) stored only as SHA-256 hashes.
/// Opaque rather than JWT: revocation and refresh-family revocation take effect at once, there is
/// no signing key to rotate or leak, and the server looks tokens up in its own database anyway.
public struct AuthConfiguration: Sendable {
    /// Default: 15 minutes.
    public var accessTokenLifetime: Duration
    /// Default: 30 days. Every refresh rotates the refresh token.
    public var refreshTokenLifetime: Duration
    /// How long after a rotation a second exchange of the rotated refresh token gets the same new
    /// pair again rather than revoking the whole family as theft: an app and its widget that
    /// refreshed one shared credential at once both keep the user signed in. After the window,
    /// reuse revokes the family as before; `.zero` turns the window off. It should exceed the
    /// client's refresh lease (20 seconds) so that a process taking over a lease whose holder was
    /// suspended mid-refresh still lands inside it. Default: 30 seconds (Okta's default too).
    public var refreshReuseGrace: Duration
    /// Default: 60 seconds.
    public var authorizationCodeLifetime: Duration
    /// Default: 10 minutes.
    public var deviceCodeLifetime: Duration
    /// The polling interval given to device clients. Default: 5 seconds.
    public var deviceInterval: Int
    /// Browser sessions on the sign-in page. Default: 12 hours.
    public var browserSessionLifetime: Duration
    /// Bcrypt cost for passwords. Default: 12; tests use less.
    public var passwordCost: UInt8
    /// Failed guesses allowed within ``rateWindow`` per account *and* client address (passwords),
    /// per client and address (client secrets) and per address (device user codes). Past it, the
    /// guess is refused unchecked and uncounted (429 with `Retry-After`). Default: 10.
    public var attemptsPerAccount: Int
    /// Failed sign-ins allowed per client address within ``rateWindow``, whatever the account (and
    /// failed provider sign-ins). Default: 30.
    public var attemptsPerAddress: Int
    /// The sliding window the failures are counted in; they are kept in storage. Default: 5 minutes.
    public var rateWindow: Duration
    /// Password checks (Bcrypt) of one client address that may run or wait at once on an instance;
    /// one more is refused at once with 429 and `Retry-After: 1`, so that a burst from one source
    /// cannot hold everyone else's sign-in behind it. Default: 2.
    public var passwordChecksPerAddress = 2
    /// Password checks that may run or wait at once on an instance, from every address; past it a
    /// check is refused with 429 rather than queued. Default: 32.
    public var passwordChecksWaiting = 32
    /// When set, the built-in `outpost.test` provider accepts `{"user": U, "signature": hex(HMAC-SHA256(secret, "outpost.test:" + U))}`.
    public var testProviderSecret: String?

    public init(
        accessTokenLifetime: Duration = .seconds(15 * 60),
        refreshTokenLifetime: Duration = .seconds(30 * 24 * 3600),
        refreshReuseGrace: Duration = .seconds(30),
        authorizationCodeLifetime: Duration = .seconds(60),
        deviceCodeLifetime: Duration = .seconds(600),
        deviceInterval: Int = 5,
        browserSessionLifetime: Duration = .seconds(12 * 3600),
        passwordCost: UInt8 = 12,
        attemptsPerAccount: Int = 10,
        attemptsPerAddress: Int = 30,
        rateWindow: Duration = .seconds(300),
        testProviderSecret: String? = nil
    ) {
        self.accessTokenLifetime = accessTokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.refreshReuseGrace = refreshReuseGrace
        self.authorizationCodeLifetime = authorizationCodeLifetime
        self.deviceCodeLifetime = deviceCodeLifetime
        self.deviceInterval = deviceInterval
        self.browserSessionLifetime = browserSessionLifetime
        self.passwordCost = passwordCost
        self.attemptsPerAccount = attemptsPerAccount
        self.attemptsPerAddress = attemptsPerAddress
        self.rateWindow = rateWindow
        self.testProviderSecret = testProviderSecret
    }
}
