/// The audit log's table (`audit_events`): append and read, no update. Rows go only by age, by
/// the operator's retention (``pruneAuditEvents(before:)``, `outpost audit prune`).
public protocol AuditStorage: Sendable {
    /// Appends one event; its ``AuditEvent/id`` is ignored (the storage numbers events in order).
    func appendAuditEvent(_ event: AuditEvent) async throws
    /// Events matching `query`, oldest first.
    func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent]
    /// Removes the events older than `before` (milliseconds since 1970); returns how many went.
    func pruneAuditEvents(before: Int64) async throws -> Int
}

/// Which audit events ``AuditStorage/auditEvents(_:)`` reads.
public struct AuditQuery: Sendable, Equatable {
    /// Events at or after this time (milliseconds since 1970).
    public var since: Int64
    /// Events whose action starts with this text (`sign_in.` matches every sign-in); empty for all.
    public var actionPrefix: String
    /// Events with an id greater than this (to read on after a page).
    public var afterID: Int64
    /// At most this many events.
    public var limit: Int

    public init(since: Int64 = 0, actionPrefix: String = "", afterID: Int64 = 0, limit: Int = 1000) {
        self.since = since
        self.actionPrefix = actionPrefix
        self.afterID = afterID
        self.limit = limit
    }
}
