/// The seam between ``OAuthLoginProvider`` and an OAuth 2.0 implementation (OutpostAuth's
/// authenticator, or a fake in tests). The session owns the credential: it stores it, restores it,
/// and refreshes the access token when it expires.
public protocol OAuthSession: Sendable {
    /// Signs a user in: with a browser or a device code when `interactive`, otherwise only from
    /// what the session already has (a stored refresh token).
    /// - Returns: `true` when signed in, `false` when the user (or the flow) cancelled.
    /// - Throws: Any error; the provider reports it as a failed login.
    func signIn(interactive: Bool) async throws -> Bool
    /// Signs out: forgets the stored credential (and revokes it where the server allows).
    func signOut() async throws
    /// A valid access token, refreshed if need be; `nil` when there is no credential or it could not be refreshed.
    var accessToken: String? { get async }
    /// Replaces the credential with a bare access token (from elsewhere); `nil` removes the credential.
    func setAccessToken(_ token: String?) async throws
    /// Loads the stored credential, silently.
    /// - Returns: whether a usable credential was found.
    func restore() async -> Bool
}
