public import Logging

/// Writes the audit log (`audit_events`): the one seam every place that records an event goes
/// through, the sign-in routes, `DELETE /me`, the CLI's administration commands and, later, an
/// admin console's actions.
///
/// ``record(_:)`` awaits one `INSERT` of a small row: sign-ins, where most events come from, spend
/// far longer on the password hash. A storage that is not an ``AuditStorage`` (a custom
/// ``ServerConfiguration/storageFactory``) keeps no log; the events then go to the logger only.
/// A failed write is logged and does not fail what was audited.
public struct AuditLog: Sendable {
    let storage: (any AuditStorage)?
    let logger: Logger

    /// - Parameters:
    ///   - storage: Where events go; `nil` when the storage keeps no audit log.
    ///   - logger: Receives each event at `debug`, and a failed write at `error`.
    public init(storage: (any AuditStorage)?, logger: Logger) {
        self.storage = storage
        self.logger = logger
    }

    /// The audit log of `storage`, when it keeps one.
    public init(storage: any Storage, logger: Logger) {
        self.init(storage: storage as? any AuditStorage, logger: logger)
    }

    /// Appends `event`.
    public func record(_ event: AuditEvent) async {
        logger.debug(
            "audit",
            metadata: ["action": "\(event.action)", "actor": "\(event.actor ?? "-")", "subject": "\(event.subject ?? "-")"])
        guard let storage else { return }
        do {
            try await storage.appendAuditEvent(event)
        } catch {
            logger.error("the audit event could not be written", metadata: ["action": "\(event.action)", "error": "\(error)"])
        }
    }
}
