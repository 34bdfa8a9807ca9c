/// One item of a ``LiveQuery``: the value, its id, and how it stands with the server.
public struct LiveRecord<Item: Sendable>: Sendable, Identifiable {
    /// The record's id: the server's id, or a local id until the server accepts a local create.
    public var id: String
    /// The record, decoded.
    public var value: Item
    /// Whether the record's last local writes wait to be sent, were accepted, or were refused.
    public var state: RecordState

    /// A record with the given parts.
    ///
    /// - Parameters:
    ///   - id: the record's id.
    ///   - value: the record.
    ///   - state: how it stands with the server.
    public init(id: String, value: Item, state: RecordState) {
        self.id = id
        self.value = value
        self.state = state
    }
}

extension LiveRecord: Equatable where Item: Equatable {}
extension LiveRecord: Hashable where Item: Hashable {}

/// How a record of a ``LiveQuery`` stands with the server.
public enum RecordState: Sendable, Hashable {
    /// Local writes to the record wait to be sent.
    case pending
    /// The server has the record as shown: no local write waits.
    case confirmed
    /// The server refused a local write to the record; the message says why.
    case failed(String)

    /// Whether local writes wait to be sent (``pending``).
    public var isPending: Bool { self == .pending }

    /// The server's reason, when a write was refused (``failed(_:)``).
    public var failure: String? {
        if case .failed(let message) = self { return message }
        return nil
    }
}
