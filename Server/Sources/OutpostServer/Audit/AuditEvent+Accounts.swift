extension AuditEvent {
    /// ``AuditAction/userDeleted`` for what an account deletion removed (`DELETE /me`, `outpost users delete`).
    public static func userDeleted(
        _ removal: AccountRemoval, files: Int, actor: String, clientAddress: String? = nil, clientID: String? = nil
    ) -> AuditEvent {
        var detail = [
            "username": removal.username, "records": "\(removal.records)", "files": "\(files)", "tokens": "\(removal.tokens)",
        ]
        if let recipient = removal.recipient { detail["transferred_to"] = recipient }
        if let clientID { detail["client_id"] = clientID }
        return AuditEvent(
            actor: actor, action: AuditAction.userDeleted, subject: removal.userID, clientAddress: clientAddress, detail: detail)
    }
}
