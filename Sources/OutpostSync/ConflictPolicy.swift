public import OutpostCore

/// What ``SyncedStore/push()`` does when the server's record changed since the local edit was
/// based on it (a 412 `precondition_failed` to `If-Match`).
public enum ConflictPolicy: Sendable {
    /// Keep the server's record and drop the local patch.
    case serverWins
    /// Apply the local patch again on the server's version.
    case clientWins
    /// Send the fields the closure returns, given the version the local edit was based on (`base`,
    /// empty when unknown), the local fields and the server's fields.
    case merge(
        @Sendable (_ base: [String: JSONValue], _ local: [String: JSONValue], _ server: [String: JSONValue]) ->
            [String: JSONValue])
}

/// A conflict ``SyncedStore/push()`` met and how it was resolved, delivered on
/// ``SyncedStore/conflicts``.
public struct ConflictEvent: Sendable, Hashable {
    /// How the conflict was resolved.
    public enum Resolution: String, Sendable, Hashable {
        /// The server's record was kept; the local patch was dropped.
        case serverWon
        /// The local patch was applied again on the server's version.
        case clientWon
        /// The merge closure's fields were sent.
        case merged
    }

    /// The record's type.
    public var type: String
    /// The record's id.
    public var id: String
    /// How the conflict was resolved.
    public var resolution: Resolution
    /// The record's fields after the resolution, as the server holds them.
    public var fields: [String: JSONValue]

    /// An event.
    ///
    /// - Parameters:
    ///   - type: the record's type.
    ///   - id: the record's id.
    ///   - resolution: how the conflict was resolved.
    ///   - fields: the record's fields after the resolution.
    public init(type: String, id: String, resolution: Resolution, fields: [String: JSONValue]) {
        self.type = type
        self.id = id
        self.resolution = resolution
        self.fields = fields
    }
}
