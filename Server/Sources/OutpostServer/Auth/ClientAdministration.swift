extension AuthStorage {
    /// Gives the confidential client `id` a new secret and returns it (shown this once: only its
    /// hash is stored). The old secret is refused from the next request on. With `revokeTokens`
    /// every token issued to the client is revoked too, as after a leak; without it the client's
    /// tokens stay valid, since they were issued to the client, not to its secret.
    ///
    /// - Returns: The new secret, or `nil` when no confidential client has that id.
    package func rotateClientSecret(id: String, revokeTokens: Bool) async throws -> String? {
        let secret = Secrets.token(prefix: "ocs_")
        guard try await replaceClientSecret(id: id, secretHash: Secrets.hash(secret), revokeTokens: revokeTokens) else {
            return nil
        }
        return secret
    }
}

extension AuditEvent {
    /// ``AuditAction/clientAdded`` for a registered client (`outpost clients add`, the admin console).
    public static func clientAdded(_ client: OAuthClient, actor: String, clientAddress: String? = nil) -> AuditEvent {
        AuditEvent(
            actor: actor, action: AuditAction.clientAdded, subject: client.id, clientAddress: clientAddress,
            detail: [
                "name": client.name, "grants": client.grants.joined(separator: " "),
                "confidential": client.isConfidential ? "true" : "false",
            ])
    }
}
