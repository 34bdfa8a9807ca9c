import Foundation

/// A person who can sign in.
public struct StoredUser: Sendable, Hashable {
    public var id: String
    public var username: String
    /// Bcrypt hash; `nil` for users who only sign in through a provider.
    package var passwordHash: String?
    public var entitlements: [String]
    public var createdAt: Int64
    /// When an administrator disabled the user (milliseconds since 1970); `nil` while they may sign in.
    public var disabledAt: Int64? = nil

    /// Whether the user may not sign in (``disabledAt`` is set).
    public var isDisabled: Bool { disabledAt != nil }
}

/// A registered OAuth client: an app, a CLI, a service.
public struct OAuthClient: Sendable, Hashable {
    public var id: String
    public var name: String
    /// SHA-256 of the secret (hex) for confidential clients; `nil` for public ones.
    package var secretHash: String?
    /// Redirect URIs, matched exactly (a loopback URI registered without a port matches any port, RFC 8252 §7.3).
    public var redirectURIs: [String]
    /// Grants the client may use: authorization_code, implicit, password, client_credentials,
    /// refresh_token, device_code.
    public var grants: [String]
    public var scopes: [String]
    public var createdAt: Int64

    public var isConfidential: Bool { secretHash != nil }

    public static let allGrants = [
        "authorization_code", "implicit", "password", "client_credentials", "refresh_token", "device_code",
        "token_exchange",
    ]
}

/// A stored token (only its SHA-256 is kept).
public struct StoredToken: Sendable {
    public enum Kind: String, Sendable { case access, refresh }
    public var hash: String
    public var kind: Kind
    public var userID: String?
    public var clientID: String
    public var scope: String
    public var family: String
    public var expiresAt: Int64
    /// `active`, `rotated` (a refresh token already exchanged) or `revoked`.
    public var state: String
}

/// The token reply that replaced a refresh token, sealed with a key only that token derives
/// (`RotatedSuccessor`), kept until `expiresAt` (ms): the refresh-reuse grace window.
public struct SealedSuccessor: Sendable {
    public var sealed: String
    public var expiresAt: Int64

    public init(sealed: String, expiresAt: Int64) {
        self.sealed = sealed
        self.expiresAt = expiresAt
    }
}

public struct StoredAuthorizationCode: Sendable {
    public var clientID: String
    public var userID: String
    public var redirectURI: String
    public var scope: String
    public var codeChallenge: String?
    public var expiresAt: Int64
    public var used: Bool
    /// The token family the code's tokens join, so that replaying the code revokes them (RFC 6749 §4.1.2).
    public var family: String?
}

public struct StoredDeviceCode: Sendable {
    public var hash: String
    public var userCode: String
    public var clientID: String
    public var scope: String
    public var expiresAt: Int64
    public var intervalSeconds: Int
    public var lastPoll: Int64
    public var status: String
    public var userID: String?
}
