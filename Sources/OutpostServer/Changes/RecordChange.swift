import Foundation

/// One row of the change feed: a record was created, updated or deleted.
///
/// Changes are written in the same transaction as the record write they describe, so a change is
/// visible exactly when its record write is. ``position`` grows with every change (across all
/// types) in commit order, and is the resume point of `GET /records/{type}/changes`.
public struct RecordChange: Sendable, Hashable {
    /// What happened to the record.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case created, updated, deleted
    }

    /// Where this change sits in the feed; larger is later.
    public var position: Int64
    public var kind: Kind
    /// The record after the change (for ``Kind/created`` and ``Kind/updated``), or as it was when it
    /// was deleted (its ``StoredRecord/body`` is then `{}`): type, id, owner, visibility and version
    /// are always set.
    public var record: StoredRecord
    /// When the change was written, in milliseconds since 1970; retention counts from it.
    public var at: Int64

    public init(position: Int64, kind: Kind, record: StoredRecord, at: Int64) {
        self.position = position
        self.kind = kind
        self.record = record
        self.at = at
    }

    /// The event's data: `{"id", "change", "version", "record"}`, the record left out of deletions.
    var eventData: String {
        var text = "{\"id\":\""
        text += record.id
        text += "\",\"change\":\"\(kind.rawValue)\",\"version\":\(record.version)"
        if kind != .deleted {
            text += ",\"record\":"
            text += record.wireText
        }
        text += "}"
        return text
    }

    /// Whether a caller (`viewer`, the signed-in user's id) may see this change: the change of a
    /// private record goes to its owner only.
    func isVisible(to viewer: String?) -> Bool {
        guard record.isPrivate else { return true }
        guard let viewer else { return false }
        return record.owner == viewer
    }
}

/// The oldest and newest positions a feed can resume from.
public struct ChangeBounds: Sendable, Hashable {
    /// Changes at or below this position were removed by retention: resuming from a smaller
    /// position would miss some. `0` when nothing was removed yet.
    public var prunedThrough: Int64
    /// The position of the newest change, `0` when there is none.
    public var latest: Int64

    public init(prunedThrough: Int64, latest: Int64) {
        self.prunedThrough = prunedThrough
        self.latest = latest
    }
}

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
