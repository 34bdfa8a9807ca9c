import Foundation
@_spi(OutpostInternal) public import OutpostCore

/// One write of a batch (`POST /records/batch`), as the storage runs it inside the batch's
/// transaction. The closures decide, from the record as the transaction finds it, what is written;
/// whatever they throw undoes the whole batch.
public enum RecordBatchWrite: Sendable {
    /// Inserts a record with a fresh id and the fields `fields` returns; a private one is readable by
    /// `owner` only.
    case create(type: String, owner: String?, isPrivate: Bool, fields: @Sendable () throws -> [String: JSONValue])
    /// Replaces the fields of `type`/`id` with what `change` returns for the current record.
    case update(type: String, id: String, change: @Sendable (StoredRecord) throws -> [String: JSONValue])
    /// Deletes `type`/`id` once `check` accepts the current record.
    case delete(type: String, id: String, check: @Sendable (StoredRecord) throws -> Void)
}

/// What one write of a batch did.
public enum RecordBatchResult: Sendable, Hashable {
    case created(StoredRecord)
    case updated(StoredRecord)
    /// The record as it was when it was deleted.
    case deleted(StoredRecord)
}

/// Why a batch wrote nothing: the write at `index` failed with `error` (a ``RecordWriteFailure``
/// when its record is missing, or what one of its closures threw).
public struct RecordBatchFailure: Error, Sendable {
    public var index: Int
    public var error: any Error

    public init(index: Int, error: any Error) {
        self.index = index
        self.error = error
    }
}

/// Batches of record writes, all or nothing.
public protocol RecordBatchStorage: Sendable {
    /// Runs `writes` in order in one transaction, each seeing the ones before it, and stores the
    /// response `respond` makes from their results under `key` in the same transaction; with a
    /// known `key` it writes nothing and says what the key holds. Without a key the claim is
    /// `.claimed(token: "")` and nothing is kept.
    ///
    /// - Throws: ``RecordBatchFailure`` naming the first write that failed (nothing is written then).
    func writeRecords(
        _ writes: [RecordBatchWrite], key: IdempotencyKey?, lifetime: Duration,
        respond: @Sendable ([RecordBatchResult]) -> StoredResponse
    ) async throws -> (claim: IdempotencyClaim, response: StoredResponse?)
}
