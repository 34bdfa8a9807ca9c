public import OutpostCore

/// One record of a ``SyncedStore`` as the app sees it: the local fields and how far they are
/// from the server.
public struct SyncedRecord: Sendable, Hashable {
    /// The record's type, e.g. `notes`.
    public var type: String
    /// The server's id, or a local id (`local-` and a UUID) until the server accepts the create.
    public var id: String
    /// The record's fields as the app last wrote them, plus the server-owned `id`, `created_at`
    /// and `updated_at` once the server has them.
    public var fields: [String: JSONValue]
    /// The server's version of the record these fields are based on (its ETag is `"v<version>"`);
    /// `nil` for a local create and for a record loaded from a list page, which carries no version.
    public var version: Int?
    /// Whether the fields are the server's, wait to be sent, or were refused.
    public var state: SyncState

    /// A record with the given parts.
    ///
    /// - Parameters:
    ///   - type: the record's type.
    ///   - id: the server's id or a local id.
    ///   - fields: the record's fields.
    ///   - version: the server version the fields are based on, if known.
    ///   - state: how the fields stand with the server.
    public init(type: String, id: String, fields: [String: JSONValue], version: Int?, state: SyncState) {
        self.type = type
        self.id = id
        self.fields = fields
        self.version = version
        self.state = state
    }
}

/// How a local record stands with the server.
public enum SyncState: Sendable, Hashable {
    /// Local writes wait to be sent by ``SyncedStore/push()``.
    case pending
    /// The fields are the server's as of the last pull or push.
    case confirmed
    /// The server refused a local write (a 4xx other than a conflict); the message says why. The
    /// write stays out of the queue until the app changes the record again.
    case failed(String)

    /// `pending`, `confirmed` or `failed`: the `_state` member of `outpost sync query`'s lines.
    public var name: String {
        switch self {
        case .pending: "pending"
        case .confirmed: "confirmed"
        case .failed: "failed"
        }
    }
}

/// The local writes of one type that have not reached the server.
public struct SyncTypeStatus: Sendable, Hashable {
    /// Writes waiting for ``SyncedStore/push()``.
    public var pending: Int
    /// Writes the server refused; they stay out of the queue.
    public var failed: Int

    /// Counts for one type.
    ///
    /// - Parameters:
    ///   - pending: writes waiting to be sent.
    ///   - failed: writes the server refused.
    public init(pending: Int, failed: Int) {
        self.pending = pending
        self.failed = failed
    }
}
