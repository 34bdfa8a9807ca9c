/// The one error type of OutpostAuth. Compare by ``code``; the set of codes is open.
///
/// An `AuthError` never carries a token, a code, a password or a secret: only the server's
/// OAuth error code (``oauthError``), its description, the HTTP status and what to do.
public struct AuthError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in any release.
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A PKCE verifier outside RFC 7636's rules.
        public static let invalidVerifier = Code(rawValue: "invalidVerifier")
        /// A credential store could not read or write.
        public static let storeFailed = Code(rawValue: "storeFailed")
        /// The credentials file exists but is not a credentials file. It is left as it is.
        public static let storeCorrupt = Code(rawValue: "storeCorrupt")
        /// The credential store cannot be used right now: the Keychain before the device's first
        /// unlock since it started (`errSecInteractionNotAllowed`). Not signed out: the credential
        /// is still there; try again once the user has unlocked the device.
        public static let credentialStoreLocked = Code(rawValue: "credentialStoreLocked")
        /// No credential is stored: sign in first.
        public static let notSignedIn = Code(rawValue: "notSignedIn")
        /// The sign-in was cancelled: the task was cancelled or the app gave the flow up.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The user (or the server on the user's behalf) declined: `error=access_denied`.
        public static let accessDenied = Code(rawValue: "accessDenied")
        /// The redirect's `state` is not the one this client sent: the redirect is refused.
        public static let stateMismatch = Code(rawValue: "stateMismatch")
        /// The redirect URL carries neither a result nor an error, or an error other than `access_denied`.
        public static let invalidRedirect = Code(rawValue: "invalidRedirect")
        /// The grant (code, refresh token, device code, password) is invalid, expired, used or revoked.
        public static let invalidGrant = Code(rawValue: "invalidGrant")
        /// The server did not accept the client's identity or secret (`invalid_client`).
        public static let invalidClient = Code(rawValue: "invalidClient")
        /// The client may not use this grant (`unauthorized_client`).
        public static let unauthorizedClient = Code(rawValue: "unauthorizedClient")
        /// A requested scope is unknown or not allowed (`invalid_scope`).
        public static let invalidScope = Code(rawValue: "invalidScope")
        /// Device flow: the user has not finished yet (`authorization_pending`). Handled by the poller.
        public static let authorizationPending = Code(rawValue: "authorizationPending")
        /// Device flow: poll more slowly (`slow_down`). Handled by the poller.
        public static let slowDown = Code(rawValue: "slowDown")
        /// Device flow: the device code expired before the user finished (`expired_token`).
        public static let expiredToken = Code(rawValue: "expiredToken")
        /// Too many sign-in attempts (HTTP 429); ``AuthError/retryAfter`` says when to try again.
        public static let rateLimited = Code(rawValue: "rateLimited")
        /// Any other OAuth error from the server; ``AuthError/oauthError`` holds its code.
        public static let serverError = Code(rawValue: "serverError")
        /// The server's answer is not what OAuth 2.0 promises (not JSON, no `access_token`...).
        public static let invalidResponse = Code(rawValue: "invalidResponse")
        /// The request did not reach the server or no answer came back.
        public static let requestFailed = Code(rawValue: "requestFailed")
        /// The discovery metadata could not be fetched or is not valid.
        public static let discoveryFailed = Code(rawValue: "discoveryFailed")
        /// An endpoint or setting the flow needs is not configured (e.g. no device endpoint).
        public static let notConfigured = Code(rawValue: "notConfigured")
        /// The browser redirect did not arrive in time.
        public static let timeout = Code(rawValue: "timeout")
        /// The browser could not be opened.
        public static let browserFailed = Code(rawValue: "browserFailed")
        /// The loopback redirect listener could not start.
        public static let listenerFailed = Code(rawValue: "listenerFailed")
        /// The local credential was removed but revoking it at the server failed.
        public static let revocationFailed = Code(rawValue: "revocationFailed")
        /// OpenID Connect: the ID token's signature does not verify with the issuer's keys, its `kid`
        /// is not in the issuer's JWKS, or its `alg` is not an accepted asymmetric one.
        public static let idTokenBadSignature = Code(rawValue: "idTokenBadSignature")
        /// OpenID Connect: the ID token's `iss` is not the configured issuer.
        public static let idTokenWrongIssuer = Code(rawValue: "idTokenWrongIssuer")
        /// OpenID Connect: the ID token's `aud` (or `azp`) does not name this client.
        public static let idTokenWrongAudience = Code(rawValue: "idTokenWrongAudience")
        /// OpenID Connect: the ID token's `exp` has passed (beyond the leeway).
        public static let idTokenExpired = Code(rawValue: "idTokenExpired")
        /// OpenID Connect: the ID token's `nonce` is not the one the authorization request sent.
        public static let idTokenNonceMismatch = Code(rawValue: "idTokenNonceMismatch")
        /// OpenID Connect: the ID token's `at_hash` does not match the access token issued with it.
        public static let idTokenAccessTokenMismatch = Code(rawValue: "idTokenAccessTokenMismatch")
        /// OpenID Connect: the ID token is missing, not a JWT, lacks a required claim, was issued in
        /// the future, or names another user than before.
        public static let idTokenInvalid = Code(rawValue: "idTokenInvalid")
    }

    public var code: Code
    /// What went wrong and what to do.
    public var message: String
    /// The server's OAuth error code (`invalid_grant`, `access_denied`...), or its Outpost error code.
    public var oauthError: String?
    /// The server's `error_description` (or Outpost error message).
    public var serverMessage: String?
    /// The HTTP status, when a response was received.
    public var status: Int?
    /// For ``Code/rateLimited``: how long the server asked to wait (`Retry-After`).
    public var retryAfter: Duration?
    public var underlying: (any Error)?

    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// An error with the server's details.
    public init(
        _ code: Code, _ message: String, oauthError: String?, serverMessage: String? = nil, status: Int? = nil,
        retryAfter: Duration? = nil, underlying: (any Error)? = nil
    ) {
        self.init(code, message, underlying: underlying)
        self.oauthError = oauthError
        self.serverMessage = serverMessage
        self.status = status
        self.retryAfter = retryAfter
    }

    public var description: String {
        var text = "\(code): \(message)"
        if oauthError != nil || serverMessage != nil {
            text += " — server said"
            if let oauthError { text += " [\(oauthError)]" }
            if let serverMessage { text += " \(serverMessage)" }
        }
        if let status, !text.contains("\(status)") { text += " (HTTP \(status))" }
        return text
    }
}
