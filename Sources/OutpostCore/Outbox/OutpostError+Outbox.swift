extension OutpostError.Code {
    /// The outbox journal cannot take this write: it would grow past
    /// ``Outbox/Configuration/maxBytes``. Replay (or drop) queued writes first, or raise the bound.
    public static let outboxFull = OutpostError.Code(rawValue: "outboxFull")
    /// The outbox journal could not be opened, read or written (permissions, disk space, or another
    /// process holding it).
    public static let outboxUnavailable = OutpostError.Code(rawValue: "outboxUnavailable")
    /// No write with this id is waiting in the outbox, or it is being sent right now.
    public static let outboxEntryNotFound = OutpostError.Code(rawValue: "outboxEntryNotFound")
}
