import Foundation

/// The audit log's table (`audit_events`): append and read, no update. Rows go only by age, by
/// the operator's retention (``pruneAuditEvents(before:)``, `outpost audit prune`).
public protocol AuditStorage: Sendable {
    /// Appends one event; its ``AuditEvent/id`` is ignored (the storage numbers events in order).
    func appendAuditEvent(_ event: AuditEvent) async throws
    /// Events matching `query`, oldest first (newest first with ``AuditQuery/newestFirst``).
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
    /// Events with an id smaller than this, when it is greater than `0` (to read back after a
    /// page read newest first).
    public var beforeID: Int64
    /// At most this many events.
    public var limit: Int
    /// The newest events first (the admin console's pages); oldest first when `false`.
    public var newestFirst: Bool

    public init(
        since: Int64 = 0, actionPrefix: String = "", afterID: Int64 = 0, beforeID: Int64 = 0, limit: Int = 1000,
        newestFirst: Bool = false
    ) {
        self.since = since
        self.actionPrefix = actionPrefix
        self.afterID = afterID
        self.beforeID = beforeID
        self.limit = limit
        self.newestFirst = newestFirst
    }
}

extension AuditQuery {
    /// `2026-11-29` (midnight UTC), `2026-11-29T10:00:00Z` or with fractional seconds, as
    /// milliseconds since 1970; `nil` for anything else (`outpost audit --since`, the admin console).
    public static func time(_ text: String) -> Int64? {
        guard text.utf8.count <= 40 else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        return nil
    }
}
