public import Foundation
public import Logging
@_spi(OutpostInternal) public import OutpostCore
@_spi(OutpostInternal) import OutpostSupport

extension Authenticator {
    /// Everything an authenticator needs. Every field but the registration and the endpoints has a default.
    public struct Configuration: Sendable {
        public var registration: ClientRegistration
        public var endpoints: Endpoints
        /// Where the credential is kept between runs. Default: in memory only.
        public var store: any CredentialStore
        /// The store key. Default: the client id.
        public var account: String
        /// Opens the browser for the browser flows and the browser sign-out. Default: ``SystemBrowser``.
        public var browser: any BrowserOpening
        /// Refresh an access token this long before it expires, but never earlier than half its
        /// lifetime (a 30-second token is refreshed 15 seconds before it expires). Default: 60 seconds.
        public var refreshMargin: Duration
        /// How long the loopback flow waits for the browser to come back. Default: 5 minutes.
        public var browserTimeout: Duration
        /// How long a custom-scheme ``AuthorizationRequest`` stays redeemable. Default: 10 minutes.
        public var authorizationLifetime: Duration
        /// Receives sign-in, refresh and failure events. Never receives a token, code, password or secret.
        /// Default: discards everything.
        public var logger: Logger
        /// The current time, for expiry. A seam for tests.
        public var now: @Sendable () -> Date
        /// Waits between device-flow polls, and between looks at another process's refresh lease. A
        /// seam for tests; the default is `Task.sleep`.
        public var sleep: @Sendable (Duration) async throws -> Void
        /// OpenID Connect: the clock difference allowed when checking an ID token's `exp` and `iat`.
        /// Default: 60 seconds.
        public var idTokenLeeway: Duration
        /// Middlewares that the token, device, revocation and provider requests go through, first to
        /// last, to observe them (log, measure, trace) or adjust them (add a header). The client's own
        /// middlewares are not used for these requests: an ``AuthMiddleware`` there must not see its
        /// own refresh. The bodies and `Authorization` headers they see hold secrets: never log them.
        /// Default: none.
        public var middlewares: [any ClientMiddleware]

        /// A configuration whose browser flows open URLs with `browser` (in an app extension, pass
        /// ``NoBrowser``: sign in there with ``Authenticator/signInWithWebAuthentication(_:scopes:)``).
        public init(
            registration: ClientRegistration,
            endpoints: Endpoints,
            store: any CredentialStore = InMemoryCredentialStore(),
            account: String? = nil,
            browser: any BrowserOpening,
            refreshMargin: Duration = .seconds(60),
            browserTimeout: Duration = .seconds(300),
            authorizationLifetime: Duration = .seconds(600),
            logger: Logger = Logger(label: "outpost.auth", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: @escaping @Sendable () -> Date = { Date() },
            sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
            idTokenLeeway: Duration = .seconds(60),
            middlewares: [any ClientMiddleware] = []
        ) {
            self.registration = registration
            self.endpoints = endpoints
            self.store = store
            self.account = account ?? registration.clientID
            self.browser = browser
            self.refreshMargin = refreshMargin
            self.browserTimeout = browserTimeout
            self.authorizationLifetime = authorizationLifetime
            self.logger = logger
            self.now = now
            self.sleep = sleep
            self.idTokenLeeway = idTokenLeeway
            self.middlewares = middlewares
        }

        /// As ``init(registration:endpoints:store:account:browser:refreshMargin:browserTimeout:authorizationLifetime:logger:now:sleep:idTokenLeeway:middlewares:)``
        /// with the platform's browser (``SystemBrowser``), which app extensions cannot use.
        @available(iOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        public init(
            registration: ClientRegistration,
            endpoints: Endpoints,
            store: any CredentialStore = InMemoryCredentialStore(),
            account: String? = nil,
            refreshMargin: Duration = .seconds(60),
            browserTimeout: Duration = .seconds(300),
            authorizationLifetime: Duration = .seconds(600),
            logger: Logger = Logger(label: "outpost.auth", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: @escaping @Sendable () -> Date = { Date() },
            sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
            idTokenLeeway: Duration = .seconds(60),
            middlewares: [any ClientMiddleware] = []
        ) {
            self.init(
                registration: registration, endpoints: endpoints, store: store, account: account, browser: SystemBrowser(),
                refreshMargin: refreshMargin, browserTimeout: browserTimeout, authorizationLifetime: authorizationLifetime,
                logger: logger, now: now, sleep: sleep, idTokenLeeway: idTokenLeeway, middlewares: middlewares)
        }

        /// The refresh margin for `credential`: ``refreshMargin``, at most half the token's lifetime
        /// when its issue time is known.
        func refreshMargin(for credential: Credential) -> TimeInterval {
            let margin = refreshMargin.inSeconds
            guard let issued = credential.issuedAt, let expires = credential.expiresAt else { return margin }
            return min(margin, max(0, expires.timeIntervalSince(issued)) / 2)
        }
    }
}

/// What the device flow shows the user (RFC 8628, 3.2). The device code itself stays inside.
public struct DeviceCode: Sendable, Hashable {
    /// The short code the user types, e.g. `WDJB-MJHT`.
    public var userCode: String
    /// Where the user types it.
    public var verificationURI: URL
    /// The same page with the code filled in, when the server offers it (good for a QR code).
    public var verificationURIComplete: URL?
    /// How long the code is valid.
    public var expiresIn: Duration
    /// The polling interval the server asked for.
    public var interval: Duration

    public init(userCode: String, verificationURI: URL, verificationURIComplete: URL?, expiresIn: Duration, interval: Duration) {
        self.userCode = userCode
        self.verificationURI = verificationURI
        self.verificationURIComplete = verificationURIComplete
        self.expiresIn = expiresIn
        self.interval = interval
    }
}

/// Which kind of token ``Authenticator/revoke(_:hint:)`` is given (RFC 7009, 2.1).
public enum TokenTypeHint: String, Sendable {
    case accessToken = "access_token"
    case refreshToken = "refresh_token"
}
