/// Users, clients, tokens, codes and browser sessions. Secrets are stored as SHA-256 hashes only.
public protocol AuthStorage: Sendable {
    /// - Throws: ``UserWriteFailure/usernameTaken`` when another user has that username (any case).
    func createUser(username: String, passwordHash: String?) async throws -> StoredUser
    /// Creates a user without a password and links a provider identity to it, in one transaction.
    ///
    /// - Throws: ``UserWriteFailure/usernameTaken`` when the username is taken;
    ///   ``UserWriteFailure/identityLinked(userID:)`` when another sign-in linked the identity first
    ///   (nothing is created then).
    func createUser(username: String, provider: String, subject: String) async throws -> StoredUser
    func user(id: String) async throws -> StoredUser?
    func user(username: String) async throws -> StoredUser?
    func setEntitlements(_ entitlements: [String], userID: String) async throws
    func userID(provider: String, subject: String) async throws -> String?
    func link(provider: String, subject: String, userID: String) async throws

    func saveClient(_ client: OAuthClient) async throws
    func client(id: String) async throws -> OAuthClient?
    func clients() async throws -> [OAuthClient]
    func removeClient(id: String) async throws -> Bool
    /// Replaces the secret of the confidential client `id` with one whose hash is `secretHash`, so
    /// the old secret is refused from now on; with `revokeTokens`, in the same transaction, revokes
    /// every token issued to the client. Returns `false`, changing nothing, when no confidential
    /// client has that id.
    func replaceClientSecret(id: String, secretHash: String, revokeTokens: Bool) async throws -> Bool

    func saveToken(_ token: StoredToken) async throws
    func token(hash: String) async throws -> StoredToken?
    /// Marks an active token with a new state; returns whether it was active.
    func transitionToken(hash: String, from: String, to: String) async throws -> Bool
    func revokeFamily(_ family: String) async throws
    /// Marks the active refresh token `hash` rotated and saves its `replacements` and, when given,
    /// its sealed `successor` reply, in one transaction; returns `false`, saving nothing, when the
    /// token was not active (already rotated by a concurrent exchange, or revoked). Successors whose
    /// time has passed (of any token) are removed in the same transaction.
    func rotateToken(hash: String, replacements: [StoredToken], successor: SealedSuccessor?) async throws -> Bool
    /// The sealed reply that replaced the rotated refresh token `hash`, while it has not expired at `now`.
    func successor(hash: String, now: Int64) async throws -> String?

    func saveCode(hash: String, _ code: StoredAuthorizationCode) async throws
    /// Marks an unused code used and returns it; `nil` when unknown or already used.
    func useCode(hash: String) async throws -> StoredAuthorizationCode?
    /// The token family of a code, used or not (to revoke the tokens of a replayed code).
    func codeFamily(hash: String) async throws -> String?

    func saveDeviceCode(_ code: StoredDeviceCode) async throws
    func deviceCode(hash: String) async throws -> StoredDeviceCode?
    func deviceCode(userCode: String) async throws -> StoredDeviceCode?
    func updateDeviceCode(hash: String, status: String?, userID: String?, lastPoll: Int64?, interval: Int?) async throws

    func saveSession(hash: String, userID: String, expiresAt: Int64) async throws
    func sessionUser(hash: String, now: Int64) async throws -> String?
    func removeSession(hash: String) async throws

    /// Failed guesses for `key` after `since`: how many, and the time of the oldest (ms).
    func failures(key: String, since: Int64) async throws -> (count: Int, oldest: Int64?)
    /// Records a failed guess for `key` at `at`, kept until `expiresAt`; rows already expired (of any key) are removed.
    func recordFailure(key: String, at: Int64, expiresAt: Int64) async throws
    func clearFailures(key: String) async throws
    /// Counts an attempt for every one of `keys` before it is checked, atomically with the counts:
    /// unless one key already holds `limit` attempts after `since` (failures, and attempts still in
    /// flight), records one at `at` for each key, kept until `expiresAt`, and returns `nil`; else
    /// records nothing and returns the time of the oldest attempt of the key that is full (the latest
    /// such time when several are). So concurrent guesses never check more than the limit.
    func reserveAttempt(_ keys: [(key: String, limit: Int)], at: Int64, since: Int64, expiresAt: Int64) async throws
        -> Int64?
    /// Removes one attempt of `key` recorded at `at`: a reserved attempt that turned out right.
    func releaseAttempt(key: String, at: Int64) async throws
}
