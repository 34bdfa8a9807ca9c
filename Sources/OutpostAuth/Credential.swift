public import Foundation

/// What a sign-in yields: an access token, and optionally a refresh token and an expiry.
///
/// Its `description` never shows the tokens, so a credential can be logged or printed safely.
public struct Credential: Sendable, Hashable, Codable, CustomStringConvertible {
    public var accessToken: String
    public var tokenType: String
    public var refreshToken: String?
    public var expiresAt: Date?
    public var scopes: [String]
    /// The OpenID Connect ID token, when the sign-in asked for `openid`: verified by the
    /// ``Authenticator`` before it was kept. Its ``IDToken/claims`` say who signed in.
    public var idToken: IDToken?
    /// When the token was granted, when known: with ``expiresAt`` it gives the token's lifetime,
    /// which caps the refresh margin.
    public var issuedAt: Date?

    public init(
        accessToken: String, tokenType: String = "Bearer", refreshToken: String? = nil, expiresAt: Date? = nil,
        scopes: [String] = [], idToken: IDToken? = nil, issuedAt: Date? = nil
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.scopes = scopes
        self.idToken = idToken
        self.issuedAt = issuedAt
    }

    /// Whether the access token expires within `margin` of `now` (or has expired).
    public func expires(within margin: TimeInterval, of now: Date = Date()) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt.timeIntervalSince(now) <= margin
    }

    public var description: String {
        "Credential(\(tokenType), access token <redacted>, refresh token \(refreshToken == nil ? "none" : "<redacted>"), "
            + "expires \(expiresAt.map { "\($0)" } ?? "never"), scopes \(scopes)"
            + (idToken.map { ", ID token for sub \($0.claims.subject) <redacted>" } ?? "") + ")"
    }
}

/// Where credentials live between runs, keyed by an account name.
public protocol CredentialStore: Sendable {
    /// The stored credential, or `nil` when there is none.
    func load(account: String) async throws -> Credential?
    /// Stores `credential`, replacing any other for `account`.
    func save(_ credential: Credential, account: String) async throws
    /// Forgets the credential of `account`; nothing happens when there is none.
    func remove(account: String) async throws

    /// Runs `body` while holding the store's exclusive lock for `account`, so that programs
    /// sharing the store read, compare and write a credential (and its ``refreshLease``) one at a
    /// time. `body` must be brief: an ``Authenticator`` never makes a network call inside it, so a
    /// lock on a file in an App Group container is never held while the app could be suspended.
    /// Stores that only one process can see need no lock: the default runs `body`.
    func withExclusiveAccess<T: Sendable>(account: String, _ body: @Sendable () async throws -> T) async throws -> T

    /// Where processes sharing this store agree which of them refreshes a credential; `nil` (the
    /// default) when only one process uses the store, where the ``Authenticator``'s own one
    /// refresh at a time is enough.
    var refreshLease: RefreshLease? { get }
}

extension CredentialStore {
    public func withExclusiveAccess<T: Sendable>(account: String, _ body: @Sendable () async throws -> T) async throws -> T {
        try await body()
    }

    public var refreshLease: RefreshLease? { nil }
}

/// Keeps credentials in memory only: for tests, and for programs that must not persist them.
public actor InMemoryCredentialStore: CredentialStore {
    private var credentials: [String: Credential] = [:]

    public init() {}

    public func load(account: String) -> Credential? { credentials[account] }

    public func save(_ credential: Credential, account: String) { credentials[account] = credential }

    public func remove(account: String) { credentials[account] = nil }
}
