import Foundation
import HTTPTypes
@_spi(OutpostInternal) import OutpostCore

extension Authenticator {
    /// Deletes the signed-in user's account at the server (`DELETE` on `Endpoints.account`, `/me` on
    /// the Outpost server), then removes the local credential as ``signOut(revoke:endBrowserSession:)``
    /// with `revoke: false` does: the server has already revoked every token of the account.
    ///
    /// Ask the person to confirm first: the server removes the account, its tokens, and its records
    /// and files (or gives them to another user, as its operator chose), and this cannot be undone.
    /// The token needs the `profile` and `records:write` scopes (or the legacy `records`).
    ///
    /// - Throws: ``AuthError``: ``AuthError/Code/notSignedIn``; ``AuthError/Code/notConfigured``
    ///   without `Endpoints.account`; the server's refusal (HTTP 403: the token lacks a scope; HTTP 401:
    ///   the token is no longer valid). The local credential is kept when the server refused.
    public func deleteAccount() async throws {
        do {
            _ = try await accountRequest(.delete, refused: "delete the account")
        } catch var error as AuthError where error.status == 403 {
            error.message = "The access token may not delete the account; sign in again asking for 'profile' and 'records:write'"
            throw error
        }
        try await signOut(revoke: false)
    }
}
