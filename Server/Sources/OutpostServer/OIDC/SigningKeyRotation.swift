public import Logging

/// An administrator's rotation of the ID-token signing key, audited: `outpost keys rotate` and the
/// admin console's signing keys page both run it.
public enum SigningKeyRotation {
    /// Makes a new key the one in use (``OpenIDStorage/rotateSigningKey(gracePeriod:)``) and records
    /// ``AuditAction/signingKeyRotated`` with the new `kid` as subject and how many retired keys went.
    ///
    /// - Parameters:
    ///   - storage: The database whose keys rotate and whose audit log records it.
    ///   - gracePeriod: how long a replaced key stays published; the server's
    ///     ``OpenIDConfiguration/signingKeyGracePeriod``.
    ///   - actor: the admin's user id, or ``AuditEvent/operatorActor`` for the CLI.
    ///   - clientAddress: the admin's address, `nil` for the CLI.
    ///   - logger: Receives the audit event, and a failure to write it.
    /// - Returns: The new key and how many old keys were deleted.
    public static func rotate(
        in storage: any Storage, gracePeriod: Duration, actor: String, clientAddress: String? = nil, logger: Logger
    ) async throws -> (key: StoredSigningKey, removed: Int) {
        let rotated = try await storage.rotateSigningKey(gracePeriod: gracePeriod)
        await AuditLog(storage: storage, logger: logger).record(
            AuditEvent(
                actor: actor, action: AuditAction.signingKeyRotated, subject: rotated.key.kid, clientAddress: clientAddress,
                detail: ["removed": "\(rotated.removed)"]))
        return rotated
    }
}
