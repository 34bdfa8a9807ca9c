import Logging
import OutpostServer

/// The audit events of the administration commands: the actor is ``AuditEvent/operatorActor``.
enum OperatorAudit {
    /// The logger of audit writes: warnings only (a failed write), so the commands' output stays theirs.
    static var logger: Logger {
        var logger = Logger(label: "outpost.audit")
        logger.logLevel = .warning
        return logger
    }

    static func record(
        _ storage: any Storage, _ action: String, subject: String?, detail: [String: String] = [:]
    ) async {
        var logger = Logger(label: "outpost.audit")
        logger.logLevel = .warning
        await AuditLog(storage: storage, logger: logger).record(
            AuditEvent(actor: AuditEvent.operatorActor, action: action, subject: subject, detail: detail))
    }
}

extension OperatorAudit {
    /// ``AuditAction/userDeleted`` by `outpost users delete`.
    static func record(_ storage: any Storage, _ removal: AccountRemoval, files: Int) async {
        var logger = Logger(label: "outpost.audit")
        logger.logLevel = .warning
        await AuditLog(storage: storage, logger: logger).record(
            AuditEvent.userDeleted(removal, files: files, actor: AuditEvent.operatorActor))
    }
}
