/// The storage side of the change feed. A backend conforms to it to serve
/// `GET /records/{type}/changes`; a ``Storage`` that does not conform answers that route with 501.
///
/// What a backend must guarantee:
///
/// - every record write (create, replace, patch, delete) inserts its ``RecordChange`` in the same
///   transaction (``SQLiteStorage`` does it with triggers on `records`, migration 8;
///   ``PostgresStorage`` with one trigger, its migration 2);
/// - positions become visible in increasing order: once a reader sees position `n`, no change
///   with a smaller position commits later. SQLite serializes writers, so this holds as is. A
///   PostgreSQL backend must keep that order itself, since sequence values are handed out before
///   commit (``PostgresStorage``'s trigger takes an advisory lock shared before the insert, and a
///   reader takes it exclusively, so it reads only positions no open write can still fill);
/// - ``changes(type:after:limit:)`` answers from the shared database, so a change written through
///   another server instance is found on the next read.
///
/// Waking subscribers is the server's job: each instance wakes its own subscribers after its own
/// writes, and looks for changes written elsewhere every ``ChangeFeedConfiguration/pollInterval``.
/// A backend that can be told of commits (PostgreSQL `LISTEN`/`NOTIFY`) calls the feed's
/// `changesCommitted()` hook instead, and the poll interval can be raised.
public protocol ChangeFeedStorage: Sendable {
    /// Up to `limit` changes with a position greater than `position`, in position order; only
    /// changes of `type` when it is given.
    func changes(type: String?, after position: Int64, limit: Int) async throws -> [RecordChange]
    /// Up to `limit` of the newest changes with a position smaller than `position`, newest first;
    /// only changes of `type` when it is given. Only positions no open write can still precede,
    /// as ``changes(type:after:limit:)`` reads them (the admin console's list of changes).
    func latestChanges(type: String?, before position: Int64, limit: Int) async throws -> [RecordChange]
    /// The positions one can resume from.
    func changeBounds() async throws -> ChangeBounds
    /// Removes changes written before `cutoff` (milliseconds since 1970) and raises
    /// ``ChangeBounds/prunedThrough`` accordingly.
    ///
    /// - Returns: how many changes were removed.
    @discardableResult
    func pruneChanges(writtenBefore cutoff: Int64) async throws -> Int
}

/// A ``ChangeFeedStorage`` that is told when changes commit through any server instance sharing
/// the database (``PostgresStorage``, with `LISTEN`/`NOTIFY`). The change feed runs
/// ``listenForChanges(_:)`` while it serves, so a write through one instance wakes the subscribers
/// of every instance at once instead of at their next ``ChangeFeedConfiguration/pollInterval``.
public protocol ChangeNotifyingStorage: ChangeFeedStorage {
    /// Calls `committed` after changes commit, through this instance or another; also whenever
    /// listening starts again after a lost connection (changes may have committed meanwhile:
    /// subscribers then read on from their own positions, so none is lost). Returns when the task
    /// is cancelled; reconnects on its own until then.
    func listenForChanges(_ committed: @escaping @Sendable () -> Void) async
}

extension ChangeFeedStorage {
    /// Reads forward from at most `4 * limit` positions back and keeps the newest: a backend that
    /// can read its feed backwards reads exactly instead (SQLite and PostgreSQL do).
    public func latestChanges(type: String?, before position: Int64, limit: Int) async throws -> [RecordChange] {
        let bounds = try await changeBounds()
        let end = min(position - 1, bounds.latest)
        let window = Int64(max(0, limit)) * 4
        let start = max(bounds.prunedThrough, end - window)
        let found = try await changes(type: type, after: start, limit: Int(window))
        return Array(found.filter { $0.position <= end }.suffix(max(0, limit)).reversed())
    }
}
