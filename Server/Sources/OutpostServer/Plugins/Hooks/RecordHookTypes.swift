public import Logging
@_spi(OutpostInternal) public import OutpostCore

/// A write to a record, as hooks name it.
public enum RecordOperation: String, Sendable, Hashable, CaseIterable {
    case create, update, delete
}

/// A write about to happen, as a before hook sees it: the hook may change ``fields`` (for a
/// create or an update) or refuse the write by throwing ``RecordRefusal``.
public struct RecordWrite: Sendable {
    public let operation: RecordOperation
    public let type: String
    /// The record's id; `nil` for a create (the id is given when the record is stored).
    public let id: String?
    /// The fields the record will have after the write: a hook may change them. Empty for a delete.
    /// The server-owned keys (`id`, `created_at`, `updated_at`) are removed after the hooks run.
    public var fields: [String: JSONValue]
    /// The record's fields before the write: `nil` for a create.
    public let current: [String: JSONValue]?
    /// Who asked for the write: `nil` without an access token, or when the server writes on its own
    /// (``RecordData/server``).
    public let caller: CallerIdentity?
    public let logger: Logger
    /// Reads and writes of other records, as the caller or as the server. Each of its writes is
    /// a transaction of its own; ``alsoCreate(_:fields:)``, ``alsoPatch(_:id:_:)`` and
    /// ``alsoDelete(_:id:)`` join this write's instead.
    public let data: RecordData
    /// Writes that commit in this write's transaction, after it.
    var joined: [RecordBatchWrite] = []

    /// Creates a record in the same transaction as this write: both are stored, or neither. The
    /// record has no owner and is public; it is written as the server (no access rule decides it,
    /// no before hook runs on it; the change feed and after hooks see it).
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - fields: the record's fields; `id`, `created_at` and `updated_at` are the server's and ignored.
    public mutating func alsoCreate(_ type: String, fields: [String: JSONValue]) {
        var fields = fields
        for key in StoredRecord.serverKeys { fields[key] = nil }
        joined.append(.create(type: type, owner: nil, isPrivate: false) { [fields] in fields })
    }

    /// Applies a JSON Merge Patch to another record in the same transaction as this write: both
    /// change, or neither (a missing record undoes both, and the request is answered 500
    /// `hook_failed`). Written as the server, as ``alsoCreate(_:fields:)`` is.
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - id: the record's id.
    ///   - changes: the fields to set, `null` for those to remove.
    public mutating func alsoPatch(_ type: String, id: String, _ changes: [String: JSONValue]) {
        let patch = JSONValue.object(changes)
        joined.append(
            .update(type: type, id: id) { current in
                guard case .object(var fields) = MergePatch.apply(patch, to: .object(try current.fields)) else { return [:] }
                for key in StoredRecord.serverKeys { fields[key] = nil }
                return fields
            })
    }

    /// Deletes another record in the same transaction as this write: both happen, or neither (a
    /// missing record undoes both, and the request is answered 500 `hook_failed`). Written as the
    /// server, as ``alsoCreate(_:fields:)`` is.
    ///
    /// - Parameters:
    ///   - type: the record type.
    ///   - id: the record's id.
    public mutating func alsoDelete(_ type: String, id: String) {
        joined.append(.delete(type: type, id: id) { _ in })
    }
}

/// A before hook's refusal: the write does not happen and the request is answered
/// `422 Unprocessable Content` with this code and message (and `details`, when given).
public struct RecordRefusal: Error, Sendable, Hashable {
    /// A machine-readable reason, such as `text_required`.
    public var code: String
    /// What is wrong and what to do, for a person.
    public var message: String
    public var details: JSONValue?

    /// - Parameters:
    ///   - code: the error code the client receives, such as `text_required`.
    ///   - message: what is wrong and what to do instead.
    ///   - details: more about the refusal, as JSON (the client receives it in `details`).
    public init(_ code: String, _ message: String, details: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }
}

/// A committed change, as an after hook sees it.
public struct RecordEvent: Sendable {
    public let operation: RecordOperation
    /// The record after the change; for a delete, the record as it was deleted, its last fields
    /// included (``StoredRecord/body`` is `{}` for a deletion stored before changes kept them).
    public let record: StoredRecord
    /// The change's position in the change feed (`GET /records/{type}/changes`).
    public let position: Int64
    /// How many times this hook ran on this change before (0 the first time): after hooks run at
    /// least once, so a hook that must not repeat a side effect checks it.
    public let attempt: Int
    public let logger: Logger
    /// Reads and writes of records, as the server.
    public let data: RecordData
}

/// One run of a scheduled job.
public struct JobRun: Sendable {
    public let name: String
    /// The scheduled time this run stands for, in milliseconds since 1970 (a run that was missed
    /// while no instance was up runs once, late, for the latest such time).
    public let scheduledAt: Int64
    public let logger: Logger
    /// Reads and writes of records, as the server.
    public let data: RecordData
}

/// Runs before a write, inside its request: changes ``RecordWrite/fields``, or throws
/// ``RecordRefusal`` (or a ``ServerError``) to refuse it.
public typealias BeforeRecordHook = @Sendable (inout RecordWrite) async throws -> Void
/// Runs after a change committed, away from the request that made it.
public typealias AfterRecordHook = @Sendable (RecordEvent) async throws -> Void
/// The body of a scheduled job.
public typealias JobBody = @Sendable (JobRun) async throws -> Void
