/// One-time invite codes for sign-up in ``SignUpMode/invite`` mode. Codes are stored as SHA-256
/// hashes only, with an expiry, so every instance on one database accepts the same codes and a
/// code is spent once whichever instance takes it.
public protocol InviteStorage: Sendable {
    /// Stores an invite's hash, valid until `expiresAt` (milliseconds since 1970); invites already
    /// expired are removed.
    func saveInvite(hash: String, expiresAt: Int64) async throws
    /// Creates a user with a password and spends the invite `inviteHash`, in one transaction: the
    /// invite is gone when the user exists, and kept when the user could not be created.
    ///
    /// - Throws: ``UserWriteFailure/inviteInvalid`` when no unexpired invite has that hash (unknown,
    ///   spent or expired); ``UserWriteFailure/usernameTaken`` when the username is taken. Nothing
    ///   changes then.
    func createUser(username: String, passwordHash: String, inviteHash: String, now: Int64) async throws -> StoredUser
}
