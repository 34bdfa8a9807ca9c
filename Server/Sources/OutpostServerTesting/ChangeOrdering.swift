import OutpostServer

/// How the PostgreSQL change-feed trigger keeps positions in commit order (the lock it takes before
/// drawing one), for `outpost-bench` to measure what each costs writes
/// (``ScratchDatabase/setChangeOrdering(_:)``).
package enum ChangeOrdering: Sendable, CaseIterable {
    /// Migration 2: an exclusive lock until commit; writers commit one at a time.
    case exclusiveWriters
    /// Migration 3 (what the storage runs): a shared lock until commit; readers wait for earlier writers.
    case sharedWriters
    /// No lock: positions may become visible out of order. For measuring the others only.
    case unordered

    /// The PL/pgSQL statement the trigger runs before it draws a position.
    var lockStatement: String {
        switch self {
        case .exclusiveWriters: return PostgresStorage.exclusiveChangesLock
        case .sharedWriters: return PostgresStorage.sharedChangesLock
        case .unordered: return "-- no ordering lock (benchmark only)"
        }
    }
}
