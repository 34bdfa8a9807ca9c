/// Users' e-mail addresses and the single-use tokens mailed to them (password reset, e-mail
/// verification). Tokens are stored as SHA-256 hashes only; each is spent by the transaction that
/// uses it, so of two uses at once (on any instances) exactly one succeeds.
public protocol MailStorage: Sendable {
    /// Sets the user's address (lower case), verified or not, or removes it (`nil`); their unspent
    /// verification tokens are spent. Returns `false` when there is no user `userID`.
    func setEmail(_ email: String?, verified: Bool, userID: String) async throws -> Bool
    func email(userID: String) async throws -> StoredEmail?
    /// The ids of users whose *verified* address is `email` (lower case), at most `limit`.
    func users(verifiedEmail email: String, limit: Int) async throws -> [String]
    /// Saves a token; tokens whose time has passed (of every user) are removed in the same call.
    func saveMailToken(_ token: StoredMailToken) async throws
    /// The token `hash` of `purpose` while it is unspent, unexpired at `now`, and the user's address
    /// is still the one it was sent to; nothing is changed (a page that only shows a form reads it).
    func mailToken(hash: String, purpose: StoredMailToken.Purpose, now: Int64) async throws -> StoredMailToken?
    /// In one transaction: spends the reset token `hash` (as ``mailToken(hash:purpose:now:)`` finds
    /// it), sets the user's password hash, revokes every token of every family the user has tokens
    /// in, removes their browser sessions, spends their unused authorization codes, denies their
    /// approved device codes and spends their other reset tokens. Returns the user's id; `nil`,
    /// changing nothing, when the token is unknown, spent, expired or for another address.
    func resetPassword(tokenHash: String, passwordHash: String, now: Int64) async throws -> String?
    /// In one transaction: spends the verification token `hash` and marks the user's address
    /// verified. Returns the user's id; `nil`, changing nothing, as ``resetPassword(tokenHash:passwordHash:now:)``.
    func verifyEmail(tokenHash: String, now: Int64) async throws -> String?
}

/// A user's e-mail address.
public struct StoredEmail: Sendable, Equatable {
    public var address: String
    public var verified: Bool

    public init(address: String, verified: Bool) {
        self.address = address
        self.verified = verified
    }
}

/// A token mailed to a user (only its SHA-256 is kept).
public struct StoredMailToken: Sendable, Equatable {
    public enum Purpose: String, Sendable {
        case reset, verify
    }

    public var hash: String
    public var purpose: Purpose
    public var userID: String
    /// The address it was sent to; the token works only while the user's address is this one.
    public var email: String
    /// Milliseconds since 1970.
    public var expiresAt: Int64

    public init(hash: String, purpose: Purpose, userID: String, email: String, expiresAt: Int64) {
        self.hash = hash
        self.purpose = purpose
        self.userID = userID
        self.email = email
        self.expiresAt = expiresAt
    }
}
