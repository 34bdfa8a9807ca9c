extension AccountManager {
    /// Deletes account `id` at its server (``Authenticator/deleteAccount()``), then removes it from
    /// the list and its credential as ``remove(_:revoke:)`` does, without revoking again. When it
    /// was the active account, the first remaining one becomes active.
    ///
    /// - Throws: ``AuthError`` ``AuthError/Code/notSignedIn`` when there is no such account; what
    ///   ``Authenticator/deleteAccount()`` throws, and then the account stays in the list.
    public func deleteAccount(_ id: String) async throws {
        try await authenticator(for: id).deleteAccount()
        try await remove(id, revoke: false)
    }
}
